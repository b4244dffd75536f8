/** A token of a session's block, offered to the server for one grant (see `SessionTokens`). */
export interface TokenOffer {
  /** The draw that started the block (decimal): still the sequence's last value, or the offer is refused. */
  readonly drawn: string;
  /** The token the grant takes if so (decimal). */
  readonly token: string;
}

/**
 * The block of fencing tokens a lock session reserved with its last `nextval`
 * (the sequence's increment, default 1024 tokens), shared by every grant of that
 * session: server grants of any key and local hand-offs.
 *
 * A grant may take the block's next token instead of drawing again only while the
 * sequence's last value is still the draw that started the block, i.e. no session
 * drew since; the server checks this in the grant's own statement, after the lock
 * was taken. So a token is still larger than every token granted before it for
 * that key: a holder before it on another session drew its block earlier (then the
 * block ended below this draw) or later (then the check fails and this grant
 * draws); one before it on this session took a smaller token of the same counter.
 * A draw that is logged, and so flushed with the commit, covers its whole block,
 * so tokens of the block stay below any draw after a server crash too. What this
 * saves: `nextval` logs every 32nd draw, and that statement waits for a WAL flush.
 */
export class SessionTokens {
  /** Tokens one draw reserves (the sequence's increment; 1: no block to share). */
  private size = 1;
  private drawn: bigint | undefined;
  private next = 0n;
  private end = -1n;

  /** Tokens one draw reserves. */
  get block(): number {
    return this.size;
  }

  /** `sized`: the session learned how many tokens one draw reserves (at least 1). */
  sized(tokensPerDraw: number): void {
    this.size = Math.max(1, tokensPerDraw);
  }

  /** Whether a token of the block is left (a local hand-off needs one). */
  get available(): boolean {
    return this.size > 1 && this.drawn !== undefined && this.next <= this.end;
  }

  /** The next token of the block, taken now (a local hand-off: the key stays held, no check needed). */
  take(): bigint | undefined {
    return this.available ? this.next++ : undefined;
  }

  /** An offer for the next grant sent on the session, or none (then the grant draws). */
  offer(): TokenOffer | undefined {
    if (!this.available) return undefined;
    return { drawn: this.drawn!.toString(), token: (this.next++).toString() };
  }

  /** A grant's token came back: a draw beyond the block starts the next block. */
  granted(token: bigint): void {
    if (this.drawn === undefined || token > this.end) {
      this.drawn = token;
      this.end = token + BigInt(this.size) - 1n;
      this.next = token + 1n;
    } else if (token >= this.next) {
      this.next = token + 1n;
    }
  }
}
