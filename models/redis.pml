/*
 * The Redis hand-off protocol of nestjs-serialized (the redis driver), as a Promela
 * model for SPIN. docs/protocol.md presents it; models/VOCABULARY.md names its states
 * and transitions (the code's names are these).
 * Its Redis is one server that never fails over; a fail-over (a promoted replica that
 * lacks the master's latest writes) and the replica acknowledgements that guard grants
 * against it (`replicas`) are models/redis-failover.pml's.
 *
 * One key K. Two processes (one RedisLockProvider each, one session each): process 0
 * has N0 waiters, process 1 has N1; every waiter asks for K once (`acquire`, mode
 * wait), and once granted holds it (one write, where the properties are checked) and
 * releases it. Redis is the five scripts, each one atomic step on shared state
 * (libs/serialized/src/providers/redis/protocol/lua/*.lua): the lock key (owner token and
 * lease expiry; its value also names the holder's fencing token, lua/lock-value.lua, for
 * LockService.inspect alone: every script compares the owner token only, so `owner` here
 * is that first part and the token is left out), the queue (places in arrival order,
 * scores drawn from the fencing counter), the heart-beats (alive-until per place), the
 * fencing counter. A call reaches Redis when its process sends it (the command
 * connection keeps order, so sending and the script's run are one step); its reply
 * goes to the process's reply FIFO and is handled in a later step of the process, so
 * anything may happen in between. Hand-offs to another process and notices are
 * pub/sub messages on that process's channel (a FIFO), handled in a later step too.
 *
 * Time is a discrete clock (`now`, up to TMAX ticks; Redis and the processes read the
 * same clock: drift is outside the model). Leases: L ticks for an acquisition or a
 * re-confirmation, PX = min(L, HB) for a hand-off (the script's cap), HB for a place's
 * heart-beat. A process whose steps come while the clock moves is a process that
 * stalled: every interleaving is explored, so a process may stall anywhere and resume
 * with what it knew before (its replies and messages read late). The process's stall
 * monitor (`respondedAt`) is `resp[p]`: the last tick the process was known
 * responsive — it ticks only with no message unread (a responsive loop reads its
 * socket first); a message's hand-off counts from it, a reply's from when its call was
 * sent. A holder renews (RedisLock.renew, at most RENEWS renewals in a run): at any step
 * while it holds K untold, one renewal in flight at a time. Its lease as last confirmed
 * is `lend` (the send time of the grant, renewal or re-check that Redis confirmed, plus
 * its lease). A renewal is sent only while `now < lend`; a renewal timer that runs at or
 * after `lend` (it fell due during a stall: timers run before I/O) sends nothing and
 * tells the holder at once (expire). A renewal goes through the outbox: it is sent at
 * one tick and its extend script (owner check against the key's owner and expiry; then
 * a lease of L from Redis's clock) may run at Redis after the clock moved; its reply is
 * handled after any interleaving (renewed): success sets `lend` to its send time + L
 * unless the holder was told meanwhile (then it stays lost), failure tells the holder.
 * While it flies it stands in for nothing: `lock.lost` and the lease-end guard timer
 * read `lend` alone. The extend script is also grant re-confirmation and the re-check
 * after a reconnect.
 *
 * What each process does (redis.backend.ts and the files it names):
 *   - a new waiter rides (local-handoff/redis.riders.ts, `admit`): behind a waiter of its process on its way
 *     to Redis (it follows that one's reply), behind the process's last place while
 *     no waiter of another process is known to be queued behind it (the place's
 *     notice), or on the process's tenure while the tenure knows of no waiter of
 *     another process (its floor); else it sends `acquire` (send, place, grant);
 *   - a hand-off (a reply's or a message's) is run at once when fresh
 *     (commands.isFresh: (now - since) * 3 <= px), else confirmed first
 *     (confirm, extend script: confirmed, or requeue under a new token);
 *   - a grant from Redis with a block of tokens begins a tenure (local-handoff/tenure.registry.ts,
 *     local-handoff/redis.tenure.ts): its holders pass K on locally with the block's next tokens,
 *     strict: to a rider or a place ahead of the tenure's floor; cohort: also up to
 *     MLH places behind it; at the block's end with riders waiting, the release keeps
 *     K with a fresh block (release script, keep); a tenure that ends any other way
 *     sends its riders to Redis (requeue);
 *   - one heart-beat per process (heartbeat script) at any time while it
 *     has places: refreshes them, passes a free key on, reports the owner (with the
 *     block its hand-off reserved when it is one of its own whose message was missed
 *     or not read yet) and the places gone (requeue);
 *   - a holder renews (renew, renewed, expire: above); a release with a renewal in
 *     flight is not passed on locally (RedisLock.release's `passable`);
 *   - a holder's write reads `lock.lost`, which compares the lease deadline as last
 *     confirmed with the clock (LocalLock.lost / RedisLock.expiredNow); the lease-end
 *     guard timer tells a holder too, renewal in flight or not; a release that finds the
 *     key gone tells it (lostAtRelease); after a Redis restart the reconnect re-checks
 *     every held lock (RedisLock.recheck).
 *
 * Bounds (defaults; -D overrides; models/model-check.json picks the configurations): N0 = 2
 * waiters in process 0, N1 = 1 in process 1; BLK = MLH + 1 = 2 tokens per block, MLH
 * (maxLocalHandOffs) = 1; the floor's window (256 places in the code) WIN = 1 and the
 * acquire reply's (64) WIN64 = 1, so that "every place looked at is the process's own"
 * happens (the 256-places case); TMAX = 2 ticks, L = 2 (lease), HB = L, PX = min(L, HB);
 * RENEWS = 1 renewal in a run with a clock (TMAX > 0), none without one;
 * CRASHES = 1, RESTARTS = 1 (Redis loses every key), LOSTS = 1 lost and DUPS = 1
 * duplicated message, GIVEUPS = 1 waiter giving up early (every waiter may give up once
 * the clock is at TMAX: its budget). COHORT=1 checks cohort mode, else strict. MAXP = n
 * (unset: no bound) puts the provider's `maxPending` admission in the model: a caller is
 * refused at once when its process has n waiters of K (n + 1 while the process does not
 * hold K: one may become the holder), at its acquire's reply when it is queued behind n
 * linked waiters of its process, and where it would ride behind n of them (P7).
 * NO_FAULTS: no clock, no crash, restart, loss, duplicate or giving up: then every waiter
 * must be served (P5). All faults at once are beyond the time budget (more than 8 M
 * states); the checked configurations are subsets: no faults (strict, cohort); lost and
 * duplicated messages (2 + 1 waiters, no clock); stalls, lease expiry and renewals (1 + 1
 * waiters, TMAX 1, L 1, RENEWS 2: 4.9 M states); a restart and a waiter giving up (1 + 1
 * waiters, no clock); a process crashing at any moment with the clock and leases of the
 * stall configuration, without renewals (1 + 1 waiters, 6.8 M states: the crashed
 * process's lease and places lapse, the other's heart-beat passes K on, P5 holds; with
 * one renewal it is 15.2 M states, beyond the 4 GB memory bound); maxPending 1 with a
 * waiter giving up (2 + 1 waiters, no clock). With L = 1 a confirmed renewal leaves
 * `lend` where it was (sent before `lend`, it is sent at `lend - 1`): that configuration
 * checks the renewal's timing — sent late, flying across the tick, run at Redis after
 * the key lapsed, answered after the holder was told, the read and the guard while it
 * flies. A renewal that moves `lend` forward, and is answered only after the old `lend`
 * passed, needs L = 2 and TMAX = 2: checked once beyond the configured bounds (1 + 1
 * waiters, RENEWS 1, no other fault: 20.8 M states, every property holds).
 *
 * The fix this model carries (CODE_AS_IS reproduces the code before it, and SPIN refutes
 * P3 there, strict and cohort, without faults): a holder notice (or a tenure's floor)
 * read while the process's next acquire was on its way was applied to the tenure and the
 * process's last place, not to the place that acquire was about to get; a newcomer then
 * rode behind that place, ahead of a waiter of another process its process had heard of.
 * `hmax`: the latest such place heard of closes a new place behind which it queued.
 *
 * The second fix (P7; BROKEN_RIDER_MAXP is the code before it, refuted without faults): a
 * caller admitted while its process did not hold K (maxPending + 1 may come, in case one
 * becomes the holder) rode behind its process's place — or, following that place's
 * acquire, rode once its reply came — with maxPending waiters already linked: a rider
 * gets no reply at which the bound is checked. `rideOrRefuse`: a newcomer that would ride
 * behind maxPending waiters is refused (the layer's `waitsThere`, asked before it rides).
 * The count is the layer's (`wt`, `wn`): a waiter counts from its first place or ride
 * until it is done, and one requeued and sent again keeps its count.
 * Checked once beyond the configured bounds (not in npm run model-check, too slow): 3 + 1
 * waiters without faults, strict 892 k states, cohort 1.03 M states, every property holds;
 * with CODE_AS_IS both refute P3 (with 2 + 1 waiters CODE_AS_IS holds: the race needs a
 * third waiter of the holding process).
 *
 * Properties (asserted; the names are docs/protocol.md's):
 *   P1 mutual exclusion among holders not told they lost the lock: at a grant, at a
 *      holder's write and at a renewal's confirmation, at most one holder would read
 *      `lost` as unset (held, untold, lease deadline ahead: with renewals in play, the
 *      lease as last confirmed) among those whose holding Redis did not lose in a restart
 *   P2 fencing tokens strictly increase in grant order, across grants from Redis and
 *      local hand-offs (a grant that Redis's key stands behind: owner = the holding's
 *      token, lease running; the fencing counter survives the restart by restarting
 *      from the server clock, which the model takes as above every token drawn)
 *   P3 strict mode: no local hand-off to a place behind a place of another process
 *      still queued; riders (both modes): a rider is served before a waiter of another
 *      process only if its process had not heard of that waiter when the rider came
 *   P4 cohort mode: a place of another process is passed by at most MLH local
 *      hand-offs
 *   P5 no deadlock (every process ends: its waiters hold and release or give up; no
 *      invalid end state); at the end no live process holds K or has a place; without
 *      faults every waiter is served
 *   P6 a holder that lost its lock is told within the bound: once its lease as last
 *      confirmed has run out it is told before its next write (its read of `lock.lost`;
 *      asserted at the write: `lend` only grows through confirmed renewals, and a
 *      renewal in flight does not count), at its release (the release reply), and
 *      after a restart at the reconnect
 *   P7 (MAXP) at most maxPending waiters of a process are counted (the layer's
 *      `waitsThere`), so at most maxPending are linked (places and riders);
 *      a caller refused for maxPending is the newest of its process: no caller that came
 *      after it waits or was served
 *   P8 arrival order at the server: every grant of a free key by a script (acquire,
 *      release, leave, heartbeat) goes to the live place at the head of the queue, which
 *      is in arrival order at Redis: no live place that queued before the grantee (a
 *      newcomer: any live place) is left queued. The exceptions, named: places whose
 *      heart-beat lapsed are passed over (and dropped); riders have no place — the
 *      release script's keep for them and the local hand-offs are P3's; cohort mode's
 *      local hand-offs past a place of another process are P4's (within MLH)
 *
 * Broken variants (each the model with one guard removed; SPIN must refute each):
 *   BROKEN_OWNER_CHECK    release.lua acts without comparing the owner token
 *   BROKEN_LOST_READ      `lock.lost` does not compare the lease deadline with the clock
 *   BROKEN_CONFIRM        grant re-confirmation runs the waiter though Redis said "lost"
 *   BROKEN_COUNTER_CLOCK  a fencing counter lost in a restart starts again from 1
 *   BROKEN_RIDER_RULE     a newcomer rides on the tenure / behind a place whatever its
 *                         process heard (the floor and the notice are not looked at)
 *   BROKEN_STRICT_FLOOR   strict mode hands off locally to a place behind the floor
 *   BROKEN_COHORT_BOUND   cohort mode hands off locally without the MLH bound (COHORT=1)
 *   BROKEN_RELEASE_TELLS  a release that finds the key gone does not tell its holder
 *   BROKEN_TENURE_TOKEN   a local hand-off without checking the holder is of the
 *                         current tenure (TenureRegistry.passOn)
 *   BROKEN_RIDER_MAXP     a newcomer rides behind maxPending linked waiters (MAXP)
 *   BROKEN_LATE_RENEWAL   the renewal rule before the late-renewal fix: a renewal is sent after the
 *                         lease ran out, `lock.lost` reads unset while a renewal flies
 *                         until its send time + L, and the guard timer leaves a holder
 *                         with a renewal in flight to its reply (refuted: P6, and P1
 *                         with P6's assertion taken out)
 *   BROKEN_ACQUIRE_ORDER  acquire.lua grants a free key to the newcomer though live
 *                         places are queued (it does not pass it to the first of them;
 *                         refuted: P8, with lease expiry — the key is free with places
 *                         queued only once a lease ran out)
 */

#ifndef N0
#define N0 2
#endif
#ifndef N1
#define N1 1
#endif
#define NW (N0 + N1)
#define LM 3                  /* most waiters of one process */
#define PW(w) ((w) < N0 -> 0 : 1)
#define PT(t) PW(tokW[t])
#define WB(p) ((p) == 0 -> 0 : N0)
#define WN(p) ((p) == 0 -> N0 : N1)
#define NONE 255
#define FINF 255              /* a tenure's floor: no waiter of another process known */
#define FMINF 0               /* a tenure's floor: unknown (nothing passes by place) */
#define UNK 254               /* a script's floor -1: not known */
#ifndef MLH
#define MLH 1
#endif
#define BLK (MLH + 1)
#ifndef COHORT
#define COHORT 0
#endif
#ifndef WIN
#define WIN 1
#endif
#ifndef WIN64
#define WIN64 1
#endif
#ifndef L
#define L 2
#endif
#ifndef HB
#define HB L
#endif
#define PX (L < HB -> L : HB)
#define CGAP 16               /* a counter re-created from the clock: above every token drawn */
#define TOKN 20
#define QN (NW + 2)
#define REPN 5
#define MSGN 4
#define OUTN 5

#ifdef NO_FAULTS
#define TMAX 0
#define CRASHES 0
#define RESTARTS 0
#define LOSTS 0
#define DUPS 0
#define GIVEUPS 0
#endif
#ifndef TMAX
#define TMAX 2
#endif
#ifndef CRASHES
#define CRASHES 1
#endif
#ifndef RESTARTS
#define RESTARTS 1
#endif
#ifndef LOSTS
#define LOSTS 1
#endif
#ifndef DUPS
#define DUPS 1
#endif
#ifndef GIVEUPS
#define GIVEUPS 1
#endif
#ifndef RENEWS
#if TMAX > 0
#define RENEWS 1
#else
#define RENEWS 0
#endif
#endif

/* reply kinds, message kinds, acquire statuses */
#define RACQ 1
#define RREL 2
#define RLEAVE 3
#define RCHK 4
#define RCONF 5
#define RREN 6
#define MHAND 1
#define MNOT 2
#define OACQ 1
#define OLEAVE 2
#define OREL 3
#define OCHK 4
#define OCONF 5
#define OREN 6
#define SQUEUED 0
#define SGRANT 1

/* The waiter phases (models/VOCABULARY.md; gave_up is "gave-up"). */
mtype:waiter = { sending, queued, riding, confirming, granted, gave_up };

/* ------------------------------------------------------------------ Redis */
byte now = 0;
byte owner = 0;               /* the lock key: owner token (0: none) */
byte oexp = 0;                /* its expiry (PX) */
byte gfen = 0;                /* the fencing token grant_next last handed with K (the value names it until that owner writes it) */
byte counter = 0;             /* the fencing counter */
bool cEx = true;              /* the counter exists */
byte epoch = 0;               /* restarts so far */
byte qT[QN];                  /* the queue: token, place (score), heart-beat (alive until) */
byte qP[QN];
byte qB[QN];
byte qBy[QN];                 /* ghost: local hand-offs that passed this place */
byte qLen = 0;
byte tokW[TOKN];              /* the waiter an owner token belongs to */
byte tokSeq = 0;
byte tokEp[TOKN];             /* ghost: the Redis epoch in which the token last became the owner */

/* -------------------------------------------------------------- processes */
bool arr[NW];                 /* arrived */
mtype:waiter ph[NW];
byte tok[NW];                 /* its owner token */
byte plc[NW];                 /* its place (its fence once handed the key) */
byte anc[NW];                 /* a rider's anchor: the waiter it rides behind (NONE: the tenure) */
byte ntc[NW];                 /* notice: place of a waiter of another process queued behind it */
byte fol[NW];                 /* the waiter whose reply it follows */
bool gr[NW];                  /* settled by being handed the key */
int rk[NW];                   /* ghost: the waiters of other processes its process had heard of when it rode */
byte rkp[NW];                 /* ghost: the place it rides at (its anchor's; 0: the tenure's) */
byte lk[NW];                  /* its lock: 0 none, 1 held, 2 released */
byte ltok[NW];                /* fencing token */
byte lend[NW];                /* lease deadline as its process knows it */
byte lten[NW];                /* the owner token it holds K under (its tenure's) */
byte lep[NW];                 /* ghost: the Redis epoch it was granted in */
bool told[NW];                /* told it lost the lock (signal aborted) */
bool rinf[NW];                /* its renewal is on its way (renewalInFlight): it stands in for nothing */
#ifdef BROKEN_LATE_RENEWAL
byte rsent[NW];               /* when that renewal was sent (the old rule reads lock.lost against rsent + L) */
#endif
bool wr[NW];                  /* wrote */
#ifdef MAXP
bool rlo[NW];                 /* its release is on its way (the code's `held` keeps it until the reply) */
bool rfz[NW];                 /* refused for maxPending (LockBusyError) */
bool wt[NW];                  /* counted as a waiter of its process (LockLines.waitsThere): from its first place or ride until it is done */
byte wn[2];                   /* each process's waiters counted so */
#endif
byte lst[2 * LM];             /* each process's linked waiters (places and riders), arrival order */
byte lLen[2];
byte ld[2];                   /* the waiter whose acquire went out last (newcomers follow it) */
byte nxt[2];                  /* next waiter to arrive */
bool tOn[2];                  /* the tenure */
byte tTok[2];
byte tIss[2];
byte tLast[2];
byte tFl[2];
byte tAh[2];
byte tSv[2];                  /* served waiters (bit per waiter): their places leave at the release */
byte svd[2];                  /* TenureRegistry.served: served waiters until the release removing their places is answered */
byte resp[2];
bool checking[2];
bool due[2];
byte hmax[2];                 /* the latest place of another process's waiter heard of by a holder notice or a tenure's floor */                  /* a check is due: the clock moved, a message was lost, Redis restarted */
bool rc[2];                   /* reconnected after a restart: the held locks are re-checked */
bool crashed[2];
bool ended[2];
int heard[2];                 /* ghost: tokens of other processes' waiters the process was told of */
byte lastTok = 0;             /* ghost: the last token granted */
byte crashes = 0;
byte restarts = 0;
byte losts = 0;
byte dups = 0;
byte giveups = 0;
byte renews = 0;              /* renewals sent so far (at most RENEWS) */

chan rep[2] = [REPN] of { byte, byte, byte, byte, byte, byte, byte, byte, byte, byte, byte, byte, byte, byte, byte, byte };
chan msg[2] = [MSGN] of { byte, byte, byte, byte, byte };
/* each process's calls on their way to Redis, in order: kind, waiter, token, served, keep */
chan out[2] = [OUTN] of { byte, byte, byte, byte, byte };

/* temporaries: written before read in every atomic step, not part of the state */
hidden byte qr_i, qt_i, rf_i, gn_m, gn_t, gn_f, gn_l, gn_fl, ac_s, ac_f, ac_l, ac_fl, ac_tail, ac_op;
hidden byte rl_s, rl_f, rl_l, rl_fl, rl_y, ck_y, ck_i, ck_m1, ck_m2, ck_m3, ck_of, ck_ol, ck_ofl, ck_pt, cf_o;
hidden byte lr_i, li_r, li_i, dt_i, dt_j, dt_b, dt_k, or_0, or_1, or_2, orN, rq_k, rq_x, rd_n, rd_f, rd_a, rd_y;
hidden byte ld_y, bt_r, p1_n, p1_y, nw_y, nw_r, po_n, cg_l, cg_y, ho_w, ho_x, gw_f, gw_p, gw_s, gw_l, gw_fl;
hidden byte hd_i, qb_a, sv_y, ls_y, x_, y_, nt_w, kp_n, kp_v, kp_s, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14, r15, r16;
hidden byte pg_x0, pg_t0, pg_f0, pg_p0, pg_s0, pg_l0, pg_fl0, pg_c0, pg_x1, pg_t1, pg_f1, pg_p1, pg_s1, pg_l1, pg_fl1, pg_c1, pgN, pg_k;
hidden byte wa_x0, wa_m0, wa_x1, wa_m1, wa_x2, wa_m2, waN, wa_k, wa_x, wa_m, o1, o2, o3, o4, o5;
hidden byte gn_alive, rd_ok, po_ok, nt_key, ac_g, cg_mv, mp_n, mp_h, mp_y;
hidden byte hc_i, hc_s;

#ifdef TRACE
#define TR(...) printf(__VA_ARGS__)
#else
#define TR(...) skip
#endif
#define LIVE (owner != 0 && now < oexp)
#define PENDING(y) (arr[y] && (ph[y] == sending || ph[y] == queued || ph[y] == riding || ph[y] == confirming))
/* until when holder y reads `lock.lost` as unset (RedisLock.expiredNow): the lease as last confirmed;
   a renewal in flight stands in for nothing */
#ifndef BROKEN_LATE_RENEWAL
#define UNTIL(y) lend[y]
#else
/* the old rule: while a renewal flies, not lost until its send time + its lease */
#define UNTIL(y) ((rinf[y] && rsent[y] + L > lend[y]) -> rsent[y] + L : lend[y])
#endif

#ifdef MAXP
/* RedisLockProvider.acquireValidated's admission: the key's waiters of the process
   (queue.pending) and whether the process holds the key (held.holds: from a grant
   until its release's reply, or its local hand-off) */
inline admission(pp) {
  mp_n = 0; mp_h = false; mp_y = WB(pp);
  do
  :: mp_y < WB(pp) + WN(pp) ->
     if :: PENDING(mp_y) -> mp_n++ :: else -> skip fi;
     if :: arr[mp_y] && (lk[mp_y] == 1 || rlo[mp_y]) -> mp_h = true :: else -> skip fi;
     mp_y++
  :: else -> break
  od
}

/* P7: a waiter refused for maxPending is the newest of its process: none that came after it waits or was served */
inline assertNewest(pp, x) {
  mp_y = x + 1;
  do
  :: mp_y < WB(pp) + WN(pp) -> assert(!arr[mp_y] || rfz[mp_y] || ph[mp_y] == gave_up); mp_y++   /* P7 */
  :: else -> break
  od
}
/* LockLines.waitsThere: a waiter counted once keeps its count (one requeued and sent again is not asked again) */
#define MAYWAIT(pp, y) (wt[y] || wn[pp] < MAXP)
inline countWaiter(pp, y) {
  if
  :: !wt[y] -> wt[y] = true; wn[pp]++; assert(wn[pp] <= MAXP)   /* P7 */
  :: else -> skip
  fi
}
#else
#define MAYWAIT(pp, y) true
#endif

inline pushRep(pp, k, w, tk, s, a, b, c, t, kp, hT, hF, hL, hFl, m1, m2, m3) {
  assert(nfull(rep[pp]));     /* BOUND: the model's reply FIFO is long enough */
  rep[pp]!k, w, tk, s, a, b, c, t, kp, hT, hF, hL, hFl, m1, m2, m3
}

inline publish(pp, k, x1, x2, x3) {
  if
  :: nfull(msg[pp]) -> msg[pp]!k, x1, x2, x3, 0
  :: full(msg[pp]) -> assert(crashed[pp] || ended[pp])   /* BOUND: the model's channel is long enough */
  fi
}

inline outPush(pp, k, w, tk, sv, kp) {
  assert(nfull(out[pp]));     /* BOUND: the model's outbox is long enough */
  out[pp]!k, w, tk, sv, kp
}

/* ------------------------------------------------------- Redis, common.lua */
inline expire() {
  if
  :: owner != 0 && now >= oexp -> owner = 0; oexp = 0
  :: else -> skip
  fi
}

inline nextFence(cnt, res) {
  if
  :: !cEx ->
#ifndef BROKEN_COUNTER_CLOCK
     counter = counter + CGAP;   /* INCRBY created it: start from the server clock (µs) */
#else
     counter = 0;                /* INCRBY created it: from 1 */
#endif
     cEx = true
  :: else -> skip
  fi;
  counter = counter + cnt;
  assert(counter < 250);         /* BOUND */
  res = counter - cnt + 1
}

inline qRemoveAt(i) {
  qr_i = i;
  do
  :: qr_i + 1 < qLen -> qT[qr_i] = qT[qr_i + 1]; qP[qr_i] = qP[qr_i + 1]; qB[qr_i] = qB[qr_i + 1]; qBy[qr_i] = qBy[qr_i + 1]; qr_i++
  :: else -> break
  od;
  qLen--;
  qT[qLen] = 0; qP[qLen] = 0; qB[qLen] = 0; qBy[qLen] = 0
}

inline qRemoveTok(t) {
  qt_i = 0;
  do
  :: qt_i < qLen && qT[qt_i] != t -> qt_i++
  :: qt_i < qLen && qT[qt_i] == t -> qRemoveAt(qt_i); break
  :: qt_i >= qLen -> break
  od
}

/* remote_floor: the place of the first waiter of another process among the first `win` */
inline rfloor(pp, win, capped, res) {
  rf_i = 0;
  do
  :: rf_i < qLen && rf_i < win && PT(qT[rf_i]) != pp -> res = qP[rf_i]; break
  :: rf_i < qLen && rf_i < win && PT(qT[rf_i]) == pp -> rf_i++
  :: rf_i >= qLen || rf_i >= win ->
     if
     :: qLen >= win && capped -> res = qP[win - 1]
     :: qLen >= win && !capped -> res = UNK
     :: else -> res = 0
     fi;
     break
  od
}

/* P8 (arrival order at the server): a grant by the server of a free key goes to the live place at
   the head of the queue — no live place that queued before the grantee (score below `score`; a
   newcomer's is above every place) is left queued. The queue is in arrival order at Redis (scores
   from the fencing counter); places whose heart-beats lapsed are passed over (and dropped). Not
   grants of a free key, so not checked here: the release script's keep (the holder keeps K for its
   riders, a fresh block) and the heart-beat's report of an owner already granted; local
   hand-offs (riders, strict mode ahead of the floor, cohort mode within its bound) are P3's and P4's. */
inline headCheck(score) {
  hc_i = 0;
  do
  :: hc_i < qLen ->
     assert(!(qB[hc_i] >= now && qP[hc_i] < score));   /* P8: no live place that queued earlier is passed over */
     hc_i++
  :: else -> break
  od
}

/* grant_next: the first live place gets K with a fresh block; its process is told by a message
   (the caller's own process by the reply) */
inline grantNext(cp) {
  gn_t = 0; gn_f = 0; gn_l = 0; gn_fl = 0;
  do
  :: qLen == 0 -> break
  :: qLen > 0 ->
     gn_m = qT[0];
     gn_alive = (qB[0] >= now);
     hc_s = qP[0];
     qRemoveAt(0);
     if
     :: gn_alive ->
        headCheck(hc_s);
        nextFence(BLK, gn_f);
        gn_l = gn_f + BLK - 1;
        rfloor(PT(gn_m), WIN, true, gn_fl);
        owner = gn_m; gfen = gn_f; tokEp[gn_m] = epoch; oexp = now + PX;
        if
        :: PT(gn_m) != cp -> publish(PT(gn_m), MHAND, gn_m, gn_f, gn_fl)
        :: else -> skip
        fi;
        gn_t = gn_m;
        break
     :: else -> skip
     fi
  od
}

/* ------------------------------------------------------------ the scripts */
/* acquire.lua, mode wait: grant a free key, or add a place (and tell the holder's and the tail's process) */
inline acquireS(w, tk, pp) {
  expire();
  ac_s = SQUEUED; ac_f = 0; ac_l = 0; ac_fl = 0; ac_g = false;
  gn_t = 0; gn_f = 0; gn_l = 0; gn_fl = 0;
  if
#ifndef BROKEN_ACQUIRE_ORDER
  :: owner == 0 && qLen == 0 -> ac_g = true
  :: owner == 0 && qLen > 0 ->
     grantNext(pp);
     ac_g = (gn_t == 0)
#else
  :: owner == 0 -> ac_g = true     /* a newcomer takes a free key while live places are queued */
#endif
  :: else -> skip
  fi;
  if
  :: ac_g ->
     headCheck(255);
     nextFence(BLK, ac_f); owner = tk; tokEp[tk] = epoch; oexp = now + L; ac_s = SGRANT; ac_l = ac_f + BLK - 1
  :: else ->
     nextFence(1, ac_f);
     ac_tail = (qLen > 0 -> qT[qLen - 1] : 0);
     assert(qLen < QN);          /* BOUND */
     qT[qLen] = tk; qP[qLen] = ac_f; qB[qLen] = now + HB; qBy[qLen] = 0; qLen++;
     ac_fl = UNK;
     ac_op = PT(owner);
     if
     :: ac_tail != 0 && PT(ac_tail) != pp && PT(ac_tail) != ac_op -> publish(PT(ac_tail), MNOT, ac_tail, ac_f, 0)
     :: else -> skip
     fi;
     if
     :: ac_op == pp -> rfloor(pp, WIN64, false, ac_fl)
     :: else -> publish(ac_op, MNOT, owner, ac_f, 0)
     fi
  fi;
  TR("ACQ w%d tok %d -> status %d fence %d last %d floor %d handed %d\n", w, tk, ac_s, ac_f, ac_l, ac_fl, gn_t);
  pushRep(pp, RACQ, w, tk, ac_s, ac_f, ac_l, ac_fl, now, 0, gn_t, gn_f, gn_l, gn_fl, 0, 0, 0)
}

/* leave.lua: remove the place; pass K on if it was handed to this token meanwhile (or is free) */
inline leaveS(tk, pp) {
  expire();
  qRemoveTok(tk);
  gn_t = 0; gn_f = 0; gn_l = 0; gn_fl = 0;
  if
  :: owner != 0 && owner != tk -> skip
  :: else ->
     grantNext(pp);
     if
     :: gn_t == 0 && owner == tk -> owner = 0; oexp = 0
     :: else -> skip
     fi
  fi;
  if
  :: gn_t != 0 -> TR("LEAVE tok %d handed %d\n", tk, gn_t); pushRep(pp, RLEAVE, NONE, tk, 0, 0, 0, 0, now, 0, gn_t, gn_f, gn_l, gn_fl, 0, 0, 0)
  :: else -> skip
  fi
}

/* release.lua: served places go; owner check; keep with a fresh block, or hand to the first live place, or delete */
inline releaseS(w, tk, sv, kp, pp) {
  expire();
  rl_y = WB(pp);
  do
  :: rl_y < WB(pp) + WN(pp) -> if :: (sv & (1 << rl_y)) != 0 -> qRemoveTok(tok[rl_y]) :: else -> skip fi; rl_y++
  :: else -> break
  od;
  rl_s = 0; rl_f = 0; rl_l = 0; rl_fl = 0;
  gn_t = 0; gn_f = 0; gn_l = 0; gn_fl = 0;
  if
#ifndef BROKEN_OWNER_CHECK
  :: owner != tk -> rl_s = 0
#endif
  :: else ->
     if
     :: kp ->
        nextFence(BLK, rl_f); oexp = now + L; rl_l = rl_f + BLK - 1;
        owner = tk;              /* (only reached with owner == tk unless the owner check is gone) */
        if
        :: qLen > 0 -> rfloor(pp, WIN, true, rl_fl)
        :: else -> rl_fl = 0
        fi;
        rl_s = 3
     :: else ->
        if
        :: qLen > 0 -> grantNext(pp)
        :: else -> skip
        fi;
        if
        :: gn_t != 0 -> rl_s = 2
        :: else -> owner = 0; oexp = 0; rl_s = 1
        fi
     fi
  fi;
  TR("REL w%d tok %d sv %d keep %d -> status %d fence %d handed %d\n", w, tk, sv, kp, rl_s, rl_f, gn_t);
  pushRep(pp, RREL, w, tk, rl_s, rl_f, rl_l, rl_fl, now, kp, gn_t, gn_f, gn_l, gn_fl, sv, 0, 0)
}

/* heartbeat.lua: heart-beats for the process's places, pass a free key on, report the owner
   (with the block its hand-off reserved when it is one of the places asked about) and the places gone */
inline checkS(pp) {
  expire();
  ck_m1 = 0; ck_m2 = 0; ck_m3 = 0;
  ck_y = WB(pp);
  do
  :: ck_y < WB(pp) + WN(pp) ->
     if
     :: arr[ck_y] && ph[ck_y] == queued ->
        ck_i = 0;
        do
        :: ck_i < qLen && qT[ck_i] != tok[ck_y] -> ck_i++
        :: ck_i < qLen && qT[ck_i] == tok[ck_y] -> qB[ck_i] = now + HB; break
        :: ck_i >= qLen ->
           if
           :: ck_m1 == 0 -> ck_m1 = tok[ck_y]
           :: ck_m1 != 0 && ck_m2 == 0 -> ck_m2 = tok[ck_y]
           :: else -> ck_m3 = tok[ck_y]
           fi;
           break
        od
     :: else -> skip
     fi;
     ck_y++
  :: else -> break
  od;
  gn_t = 0; gn_f = 0; gn_l = 0; gn_fl = 0;
  if
  :: owner == 0 -> grantNext(pp)
  :: else -> skip
  fi;
  ck_of = 0; ck_ol = 0; ck_ofl = 0;
  if
  :: owner != 0 && owner != gn_t && PT(owner) == pp && tok[tokW[owner]] == owner && arr[tokW[owner]] && ph[tokW[owner]] == queued ->
     ck_of = gfen; ck_ol = ck_of + BLK - 1; rfloor(pp, WIN, true, ck_ofl)   /* the block the hand-off reserved */
  :: else -> skip
  fi;
  ck_pt = (owner != 0 -> oexp - now : 0);
  TR("CHK p%d -> owner %d handed %d ofence %d missing %d %d %d\n", pp, owner, gn_t, ck_of, ck_m1, ck_m2, ck_m3);
  pushRep(pp, RCHK, NONE, owner, ck_pt, ck_of, ck_ol, ck_ofl, now, 0, gn_t, gn_f, gn_l, gn_fl, ck_m1, ck_m2, ck_m3)
}

/* ------------------------------------------------------ the process side */
inline newTok(w) {
  tokSeq++;
  assert(tokSeq < TOKN);      /* BOUND */
  tokW[tokSeq] = w;
  tok[w] = tokSeq
}

inline byToken(pp, t, res) {
  res = NONE;
  if
  :: t != 0 && PT(t) == pp && tok[tokW[t]] == t && PENDING(tokW[t]) -> res = tokW[t]
  :: else -> skip
  fi
}

inline listAppend(pp, x) {
  assert(lLen[pp] < LM);
  lst[pp * LM + lLen[pp]] = x;
  lLen[pp]++;
#ifdef MAXP
  assert(lLen[pp] <= MAXP)   /* P7: at most maxPending waiters of a process wait for the key (places and riders) */
#endif
  skip
}

inline listRemove(pp, x) {
  lr_i = 0;
  do
  :: lr_i < lLen[pp] && lst[pp * LM + lr_i] != x -> lr_i++
  :: lr_i < lLen[pp] && lst[pp * LM + lr_i] == x ->
     do
     :: lr_i + 1 < lLen[pp] -> lst[pp * LM + lr_i] = lst[pp * LM + lr_i + 1]; lr_i++
     :: else -> break
     od;
     lLen[pp]--;
     lst[pp * LM + lLen[pp]] = 0;
     break
  :: lr_i >= lLen[pp] -> break
  od
}

inline lIdx(pp, x, res) {
  res = NONE; li_i = 0;
  do
  :: li_i < lLen[pp] && lst[pp * LM + li_i] == x -> res = li_i; break
  :: li_i < lLen[pp] && lst[pp * LM + li_i] != x -> li_i++
  :: li_i >= lLen[pp] -> break
  od
}

inline orAdd(x) {
  if
  :: orN == 0 -> or_0 = x
  :: orN == 1 -> or_1 = x
  :: else -> or_2 = x
  fi;
  orN++
}

inline orAt(k, res) {
  if
  :: k == 0 -> res = or_0
  :: k == 1 -> res = or_1
  :: else -> res = or_2
  fi
}

/* the tail place the process's last linked waiter stands for (a rider: its anchor) */
inline tailAnchor(pp, res) {
  res = NONE;
  if
  :: lLen[pp] > 0 ->
     res = lst[pp * LM + lLen[pp] - 1];
     if
     :: ph[res] == riding -> res = anc[res]
     :: else -> skip
     fi
  :: else -> skip
  fi
}

/* ghost: the process is told that the waiter at `place` waits (if it is another process's) */
inline heardOf(pp, place) {
  hd_i = 0;
  do
  :: hd_i < qLen && qP[hd_i] == place && PT(qT[hd_i]) != pp -> heard[pp] = heard[pp] | (1 << qT[hd_i]); break
  :: hd_i < qLen && !(qP[hd_i] == place && PT(qT[hd_i]) != pp) -> hd_i++
  :: hd_i >= qLen -> break
  od
}

/* TenureRegistry.learned */
inline learned(pp, f) {
  if
  :: f > 0 && f != UNK && f != FINF -> heardOf(pp, f)
  :: else -> skip
  fi;
  if
  :: tOn[pp] && f > 0 && f != UNK && f != FINF && f < tFl[pp] -> tFl[pp] = f
  :: else -> skip
  fi;
  if
  :: tOn[pp] && f > 0 && f != UNK && f != FINF && f > hmax[pp] -> hmax[pp] = f
  :: else -> skip
  fi
}

/* send: the waiter's acquire goes out (it reaches Redis in this step) */
inline enqueue(pp, x) {
  ph[x] = sending;
  ld[pp] = x;
  outPush(pp, OACQ, x, tok[x], 0, 0)
}

/* riders whose place or tenure is gone take places of their own, in arrival order (requeue) */
inline requeue(pp) {
  rq_k = 0;
  do
  :: rq_k < orN ->
     orAt(rq_k, rq_x);
     anc[rq_x] = NONE;
     enqueue(pp, rq_x);
     rq_k++
  :: else -> break
  od;
  orN = 0
}

/* takeRun at the front: the tenure's riders */
inline unride(pp) {
  orN = 0;
  do
  :: lLen[pp] > 0 && ph[lst[pp * LM]] == riding -> orAdd(lst[pp * LM]); listRemove(pp, lst[pp * LM])
  :: else -> break
  od;
  requeue(pp)
}

/* RedisBackend.detach: x leaves its place without the key; the riders behind it go to or_ */
inline detach(pp, x) {
  orN = 0;
  lIdx(pp, x, dt_i);
  if
  :: dt_i != NONE ->
     if
     :: dt_i > 0 ->
        dt_b = lst[pp * LM + dt_i - 1];
        if
        :: ph[dt_b] == riding -> dt_b = anc[dt_b]
        :: else -> skip
        fi;
        if
        :: dt_b != NONE && ph[dt_b] == queued && plc[x] < ntc[dt_b] -> ntc[dt_b] = plc[x]
        :: else -> skip
        fi
     :: else -> skip
     fi;
     dt_j = dt_i + 1;
     do
     :: dt_j < lLen[pp] && ph[lst[pp * LM + dt_j]] == riding -> orAdd(lst[pp * LM + dt_j]); dt_j++
     :: else -> break
     od;
     dt_k = 0;
     do
     :: dt_k < orN -> orAt(dt_k, dt_b); listRemove(pp, dt_b); dt_k++
     :: else -> break
     od;
     listRemove(pp, x)
  :: else -> skip
  fi
}

/* settle: the waiter is done (granted or gave_up) */
inline settle(pp, x, final) {
  orN = 0;
  if
  :: ph[x] == queued && !gr[x] -> detach(pp, x)
  :: ph[x] == queued && gr[x] -> listRemove(pp, x)
  :: ph[x] == riding -> listRemove(pp, x)
  :: else -> fol[x] = NONE
  fi;
  ph[x] = final;
#ifdef MAXP
  if :: wt[x] -> wt[x] = false; wn[pp]-- :: else -> skip fi;   /* LockLines.leave: it counts no more */
#endif
  requeue(pp)
}

inline link(pp, x, a) {
  TR("RIDE w%d anchor %d\n", x, a);
  anc[x] = a;
  ph[x] = riding;
  listAppend(pp, x);
  rk[x] = heard[pp];
  rkp[x] = (a == NONE -> 0 : plc[a])
}

/* admit (redis.backend.ts, asking the layer's LockLines.waitsThere before a waiter rides): a rider is a waiter; it
   gets no reply to be refused at, so it is refused here when maxPending waiters of its process already wait (the
   defect P7 found: it rode) */
inline rideOrRefuse(pp, x, a) {
#ifdef MAXP
  if
#ifndef BROKEN_RIDER_MAXP
  :: !MAYWAIT(pp, x) -> TR("REFUSED rider w%d\n", x); assertNewest(pp, x); rfz[x] = true; settle(pp, x, gave_up)
  :: else -> countWaiter(pp, x); link(pp, x, a)
#else
  :: true -> link(pp, x, a)
#endif
  fi
#else
  link(pp, x, a)
#endif
}

/* admit (local-handoff/redis.riders.ts): rd_ok when the waiter rides, follows or is refused */
inline ride(pp, x) {
  rd_ok = false;
  rd_n = 0; rd_f = 0; rd_y = WB(pp);
  do
  :: rd_y < WB(pp) + WN(pp) ->
     if :: PENDING(rd_y) -> rd_n++ :: else -> skip fi;
     if :: arr[rd_y] && fol[rd_y] != NONE -> rd_f++ :: else -> skip fi;
     rd_y++
  :: else -> break
  od;
  if
  :: rd_n != lLen[pp] + rd_f + 1 ->
     /* someone of the process is on its way to a place: follow it */
     if
     :: ld[pp] != NONE && ld[pp] != x && ph[ld[pp]] == sending -> fol[x] = ld[pp]; rd_ok = true
     :: else -> skip
     fi
  :: else ->
     tailAnchor(pp, rd_a);
     if
     :: rd_a != NONE && ph[rd_a] == queued ->
#ifndef BROKEN_RIDER_RULE
        if
        :: ntc[rd_a] == FINF -> rideOrRefuse(pp, x, rd_a); rd_ok = true
        :: else -> skip
        fi
#else
        rideOrRefuse(pp, x, rd_a); rd_ok = true
#endif
     :: else ->
#ifndef BROKEN_RIDER_RULE
        if
        :: tOn[pp] && tFl[pp] == FINF -> rideOrRefuse(pp, x, NONE); rd_ok = true
        :: else -> skip
        fi
#else
        if
        :: tOn[pp] -> rideOrRefuse(pp, x, NONE); rd_ok = true
        :: else -> skip
        fi
#endif
     fi
  fi
}

/* the reply to x's acquire came: its followers ride or queue (lead) */
inline lead(pp, x) {
  if
  :: ld[pp] == x -> ld[pp] = NONE
  :: else -> skip
  fi;
  ld_y = WB(pp);
  do
  :: ld_y < WB(pp) + WN(pp) ->
     if
     :: arr[ld_y] && fol[ld_y] == x ->
        fol[ld_y] = NONE;
        ride(pp, ld_y);
        if
        :: !rd_ok -> enqueue(pp, ld_y)
        :: else -> skip
        fi
     :: else -> skip
     fi;
     ld_y++
  :: else -> break
  od
}

/* P1: at most one holder would read `lost` as unset */
inline checkP1() {
  p1_n = 0; p1_y = 0;
  do
  :: p1_y < NW ->
     if :: lk[p1_y] == 1 && !told[p1_y] && now < UNTIL(p1_y) && lep[p1_y] == epoch -> p1_n++ :: else -> skip fi;
     p1_y++
  :: else -> break
  od;
  assert(p1_n <= 1)            /* P1 */
}

/* a holder begins: P2 over grants Redis stands behind, P1 */
inline hold(x, fence, lendv, tk) {
  TR("HOLD w%d token %d lend %d under %d (owner %d oexp %d now %d)\n", x, fence, lendv, tk, owner, oexp, now);
  lk[x] = 1; ltok[x] = fence; lend[x] = lendv; lten[x] = tk; lep[x] = tokEp[tk]; told[x] = false; wr[x] = false;
  if
  :: LIVE && owner == tk && lep[x] == epoch -> assert(fence > lastTok) /* P2 */; lastTok = fence
  :: else -> skip
  fi;
  checkP1()
}

/* the tenure ends: its riders requeue */
inline drop(pp) {
  tOn[pp] = false; tTok[pp] = 0; tIss[pp] = 0; tLast[pp] = 0; tFl[pp] = 0; tAh[pp] = 0; tSv[pp] = 0;
  unride(pp)
}

/* the served waiters' places go (a tenure lost and not yet released) */
inline leaveServed(pp) {
  ls_y = WB(pp);
  do
  :: ls_y < WB(pp) + WN(pp) -> if :: (tSv[pp] & (1 << ls_y)) != 0 -> outPush(pp, OLEAVE, NONE, tok[ls_y], 0, 0) :: else -> skip fi; ls_y++
  :: else -> break
  od
}

/* TenureRegistry.begin: a lock from Redis; a block of tokens begins a tenure */
inline tenureBegin(pp, x, fence, px, since, last, floor) {
  if
  :: tOn[pp] -> leaveServed(pp); drop(pp)
  :: else -> skip
  fi;
  cg_l = (last < fence + MLH -> last : fence + MLH);
  if
  :: cg_l > fence ->
     tOn[pp] = true; tTok[pp] = tok[x]; tIss[pp] = fence; tLast[pp] = cg_l;
     tFl[pp] = (floor == UNK -> FMINF : (floor == 0 -> FINF : floor));
     if :: floor != UNK && floor != 0 -> heardOf(pp, floor); if :: floor > hmax[pp] -> hmax[pp] = floor :: else -> skip fi :: else -> skip fi;
     tAh[pp] = 0; tSv[pp] = 0
  :: else -> unride(pp)
  fi;
  hold(x, fence, since + px, tok[x])
}

/* RedisBackend.grant: fresh → granted; else confirm (extend, owner-checked) */
inline grantW(pp, x, fence, px, since, last, floor) {
  gw_f = fence; gw_p = px; gw_s = since; gw_l = last; gw_fl = floor;
  if
  :: (now - gw_s) * 3 <= gw_p ->
     gr[x] = true;
     settle(pp, x, granted);
     tenureBegin(pp, x, gw_f, gw_p, gw_s, gw_l, gw_fl);
     learned(pp, ntc[x])
  :: else ->
     /* confirm */
     if
     :: ph[x] == queued -> detach(pp, x); requeue(pp)
     :: else -> skip
     fi;
     ph[x] = confirming;
     plc[x] = gw_f;
     TR("CONFIRM w%d\n", x);
     outPush(pp, OCONF, x, tok[x], 0, 0)
  fi
}

/* hand-offs and requeues a reply or message causes run after it (one copy of each in the model) */
inline queueGrant(x, f, px, since, last, floor, conf) {
  if
  :: pgN == 0 -> pg_x0 = x; pg_t0 = tok[x]; pg_f0 = f; pg_p0 = px; pg_s0 = since; pg_l0 = last; pg_fl0 = floor; pg_c0 = conf
  :: else -> assert(pgN == 1); pg_x1 = x; pg_t1 = tok[x]; pg_f1 = f; pg_p1 = px; pg_s1 = since; pg_l1 = last; pg_fl1 = floor; pg_c1 = conf
  fi;
  pgN++
}

inline queueWaitAgain(x, m) {
  if
  :: waN == 0 -> wa_x0 = x; wa_m0 = m
  :: waN == 1 -> wa_x1 = x; wa_m1 = m
  :: else -> wa_x2 = x; wa_m2 = m
  fi;
  waN++
}

/* a script passed K to member hT: if it is a waiter of this process (not settled, not confirming) */
inline handedOver(pp, hT, hF, hL, hFl, since) {
  byToken(pp, hT, ho_w);
  ho_x = (hT != 0 && PT(hT) == pp && tok[tokW[hT]] == hT && (svd[pp] & (1 << tokW[hT])) != 0);
  if
  :: ho_x -> outPush(pp, OLEAVE, NONE, hT, 0, 0)   /* handedToServed: pass it on */
  :: !ho_x && ho_w != NONE && ph[ho_w] != confirming -> queueGrant(ho_w, hF, PX, since, hL, hFl, 0)
  :: else -> skip
  fi
}

/* waitAgain: requeue under a new token (mayHold: pass K on first) */
inline waitAgain(pp, x, mayHold) {
  TR("WAITAGAIN w%d\n", x);
  if :: mayHold -> outPush(pp, OLEAVE, NONE, tok[x], 0, 0) :: else -> skip fi;
  if
  :: ph[x] == queued -> detach(pp, x); requeue(pp)
  :: else -> skip
  fi;
  plc[x] = 0;
  ntc[x] = FINF;
  newTok(x);
  enqueue(pp, x)
}

/* giveUp: settle; leave its place if it has one */
inline giveUp(pp, x) {
  y_ = (ph[x] == queued || ph[x] == confirming);
  settle(pp, x, gave_up);
  if :: y_ -> outPush(pp, OLEAVE, NONE, tok[x], 0, 0) :: else -> skip fi
}

/* TenureRegistry.next: the local waiter a release may pass K to */
inline nextW(pp, res) {
  res = NONE;
  if
  :: lLen[pp] > 0 ->
     nw_y = lst[pp * LM];
     if
     :: ph[nw_y] == riding || plc[nw_y] < tFl[pp] -> res = nw_y
     :: else ->
#if COHORT
#ifndef BROKEN_COHORT_BOUND
        if :: tAh[pp] < MLH -> res = nw_y :: else -> skip fi
#else
        res = nw_y
#endif
#else
#ifdef BROKEN_STRICT_FLOOR
        res = nw_y
#else
        skip
#endif
#endif
     fi
  :: else -> skip
  fi
}

/* serve: a local hand-off to y with token fence; P3 and P4 on the ghost queue */
inline serve(pp, y, fence, lendv) {
  TR("SERVE p%d w%d token %d\n", pp, y, fence);
  if
  :: ph[y] == riding ->
     hd_i = 0;
     do
     :: hd_i < qLen ->
        if
        :: PT(qT[hd_i]) != pp && qP[hd_i] > rkp[y] -> assert((rk[y] & (1 << qT[hd_i])) == 0)   /* P3: riders */
        :: else -> skip
        fi;
        hd_i++
     :: else -> break
     od
  :: else ->
     hd_i = 0;
     do
     :: hd_i < qLen ->
        if
        :: PT(qT[hd_i]) != pp && qP[hd_i] < plc[y] ->
           qBy[hd_i]++;
#if COHORT
           assert(qBy[hd_i] <= MLH)   /* P4 */
#else
           assert(false)              /* P3 */
#endif
        :: else -> skip
        fi;
        hd_i++
     :: else -> break
     od
  fi;
  if :: tFl[pp] != FINF -> tAh[pp]++ :: else -> skip fi;
  if :: ph[y] == queued -> tSv[pp] = tSv[pp] | (1 << y); svd[pp] = svd[pp] | (1 << y) :: else -> skip fi;
  tIss[pp] = fence;
  gr[y] = true;
  settle(pp, y, granted);
  hold(y, fence, lendv, tTok[pp])
}

/* RedisLock.release */
inline release(pp, x) {
  TR("RELEASE w%d now %d lend %d\n", x, now, lend[x]);
  lk[x] = 2;
  po_ok = false;
  if
  :: !told[x] && now < lend[x] && !rinf[x] ->
     /* passable (no renewal in flight): TenureRegistry.passOn */
     if
#ifndef BROKEN_TENURE_TOKEN
     :: tOn[pp] && tTok[pp] == lten[x] && ltok[x] < tLast[pp] ->
#else
     :: tOn[pp] && ltok[x] < tLast[pp] ->
#endif
        nextW(pp, po_n);
        if
        :: po_n != NONE -> serve(pp, po_n, ltok[x] + 1, lend[x]); po_ok = true
        :: else -> skip
        fi
     :: else -> skip
     fi
  :: else -> skip
  fi;
  if
  :: !po_ok ->
     kp_v = 0;
     if
     :: !told[x] && now < lend[x] && !rinf[x] && tOn[pp] && tTok[pp] == lten[x] ->
        /* keepFor: riders wait and the next local waiter may be served */
        kp_n = 0; kp_s = 0;
        do
        :: kp_s < lLen[pp] -> if :: ph[lst[pp * LM + kp_s]] == riding -> kp_n++ :: else -> skip fi; kp_s++
        :: else -> break
        od;
        nextW(pp, nw_r);
        if :: kp_n > 0 && nw_r != NONE -> kp_v = 1 :: else -> skip fi
     :: else -> skip
     fi;
     if
     :: kp_v -> kp_s = tSv[pp]; tSv[pp] = 0            /* keeping */
     :: !kp_v && tOn[pp] && tTok[pp] == lten[x] -> kp_s = tSv[pp]; drop(pp)   /* end */
     :: else -> kp_s = 0
     fi;
#ifdef MAXP
     rlo[x] = true;
#endif
     outPush(pp, OREL, x, lten[x], kp_s, kp_v)
  :: else -> skip
  fi
}

/* the release's reply */
inline onRelease(pp) {
  svd[pp] = svd[pp] & ~r15;     /* forget(served) */
#ifdef MAXP
  if :: r2 != NONE -> rlo[r2] = false :: else -> skip fi;   /* releaseAnswered: held.delete */
#endif
  /* r2 holder (NONE: an idle release), r3 token, r4 status, r5 fence, r6 last, r7 floor, r8 sentAt, r9 keep */
  if
  :: r4 == 0 && r2 != NONE ->
#ifndef BROKEN_RELEASE_TELLS
     told[r2] = true;           /* lostAtRelease */
#endif
     assert(told[r2])           /* P6: a loss found at release is told */
  :: else -> skip
  fi;
  if
  :: r4 == 3 ->
     /* TenureRegistry.kept */
     po_ok = false;
     if
     :: tOn[pp] && tTok[pp] == r3 ->
        tLast[pp] = r6;
        learned(pp, r7);
        nextW(pp, po_n);
        if :: po_n != NONE -> serve(pp, po_n, r5, r8 + L); po_ok = true :: else -> skip fi
     :: else -> skip
     fi;
     if
     :: !po_ok ->
        /* nobody left to serve: an idle lock released at once */
        if
        :: tOn[pp] && tTok[pp] == r3 -> kp_s = tSv[pp]; drop(pp)
        :: else -> kp_s = 0
        fi;
        outPush(pp, OREL, NONE, r3, kp_s, 0)
     :: else -> skip
     fi
  :: r4 != 3 && r9 != 0 && tOn[pp] && tTok[pp] == r3 -> drop(pp)   /* ended */
  :: else -> skip
  fi;
  if :: r11 != 0 -> handedOver(pp, r11, r12, r13, r14, r8) :: else -> skip fi
}

/* the acquire's reply (RedisBackend.onAcquireReply, placeOrUndo) */
inline onAcquire(pp) {
  /* r2 waiter, r3 token, r4 status, r5 fence, r6 last, r7 floor, r8 sentAt, r11.. handed */
  if :: r11 != 0 -> handedOver(pp, r11, r12, r13, r14, r8) :: else -> skip fi;
  if :: r4 == SQUEUED -> learned(pp, r7) :: else -> skip fi;
  if
  :: tok[r2] != r3 -> outPush(pp, OLEAVE, NONE, r3, 0, 0)                     /* an earlier attempt: undo it */
  :: tok[r2] == r3 && (ph[r2] == granted || ph[r2] == gave_up) ->
     if :: !gr[r2] -> outPush(pp, OLEAVE, NONE, r3, 0, 0) :: else -> skip fi
  :: tok[r2] == r3 && ph[r2] == confirming -> skip
  :: tok[r2] == r3 && ph[r2] == sending && r4 == SGRANT -> queueGrant(r2, r5, L, r8, r6, 0, 0)
#ifdef MAXP
  :: tok[r2] == r3 && ph[r2] == sending && r4 == SQUEUED && !MAYWAIT(pp, r2) ->
     /* let through in case it became the holder, and it did not: one waiter too many (LockBusyError) */
     TR("REFUSED w%d\n", r2);
     assertNewest(pp, r2);
     rfz[r2] = true;
     settle(pp, r2, gave_up);
     outPush(pp, OLEAVE, NONE, r3, 0, 0)
#endif
  :: tok[r2] == r3 && ph[r2] == sending && r4 == SQUEUED && MAYWAIT(pp, r2) ->
#ifdef MAXP
     countWaiter(pp, r2);
#endif
     plc[r2] = r5;
     ph[r2] = queued;                                    /* place */
     listAppend(pp, r2);
     /* the fix of the defect this model found (docs/protocol.md): a waiter of another process
        the process heard of (holder notice, tenure floor) queued behind this place, told while
        this acquire was on its way, closes the place to riders */
#ifndef CODE_AS_IS
     if
     :: hmax[pp] > r5 && hmax[pp] < ntc[r2] -> ntc[r2] = hmax[pp]
     :: else -> skip
     fi
#endif
  :: else -> skip
  fi;
  lead(pp, r2)
}

/* the check's reply (RedisBackend.onHeartbeatReply) */
inline onCheck(pp) {
  /* r3 owner, r4 pttl, r5 owner fence, r6 last, r7 floor, r8 sentAt, r11.. handed, r15 r16 r10: missing */
  checking[pp] = false;
  if :: r11 != 0 -> handedOver(pp, r11, r12, r13, r14, r8) :: else -> skip fi;
  byToken(pp, r3, bt_r);
  if
  :: bt_r != NONE && ph[bt_r] == queued && r5 > 0 -> queueGrant(bt_r, r5, r4, r8, r6, r7, 0)
  :: else -> skip
  fi;
  if
  :: r15 != 0 && r15 != r3 -> byToken(pp, r15, bt_r); if :: bt_r != NONE && ph[bt_r] == queued -> queueWaitAgain(bt_r, 0) :: else -> skip fi
  :: else -> skip
  fi;
  if
  :: r16 != 0 && r16 != r3 -> byToken(pp, r16, bt_r); if :: bt_r != NONE && ph[bt_r] == queued -> queueWaitAgain(bt_r, 0) :: else -> skip fi
  :: else -> skip
  fi;
  if
  :: r10 != 0 && r10 != r3 -> byToken(pp, r10, bt_r); if :: bt_r != NONE && ph[bt_r] == queued -> queueWaitAgain(bt_r, 0) :: else -> skip fi
  :: else -> skip
  fi
}

/* the re-confirmation's reply (RedisBackend.confirm) */
inline onConfirm(pp) {
  /* r2 waiter, r3 token, r4 ours, r8 sentAt */
  if
  :: ph[r2] == confirming && tok[r2] == r3 ->
     if
     :: r4 && (now - r8) * 3 <= L -> queueGrant(r2, plc[r2], L, r8, plc[r2], 0, 1)   /* confirmed */
     :: r4 && (now - r8) * 3 > L -> queueWaitAgain(r2, 1)                        /* late */
#ifndef BROKEN_CONFIRM
     :: !r4 -> queueWaitAgain(r2, 0)                                             /* lost: requeue */
#else
     :: !r4 -> queueGrant(r2, plc[r2], L, now, plc[r2], 0, 1)
#endif
     fi
  :: else -> skip
  fi
}

/* a message on the process's channel: a hand-off, or a notice */
inline onMessage(pp) {
  if
  :: r1 == MHAND -> handedOver(pp, r2, r3, r3 + BLK - 1, r4, resp[pp])
  :: r1 == MNOT ->
     /* noticed(owner r2, place r3) */
     nt_key = false;
     if
     :: tOn[pp] && tTok[pp] == r2 -> learned(pp, r3); nt_key = true
     :: else ->
        byToken(pp, r2, nt_w);
        if
        :: nt_w != NONE -> if :: r3 < ntc[nt_w] -> ntc[nt_w] = r3 :: else -> skip fi; nt_key = true
        :: else -> skip
        fi
     fi;
     if
     :: nt_key ->
        heardOf(pp, r3);
        if :: r3 > hmax[pp] -> hmax[pp] = r3 :: else -> skip fi;
        /* queuedBehind */
        tailAnchor(pp, qb_a);
        if
        :: qb_a != NONE && ph[qb_a] == queued && plc[qb_a] < r3 && r3 < ntc[qb_a] -> ntc[qb_a] = r3
        :: else -> skip
        fi
     :: else -> skip
     fi
  fi
}

inline runAfter(pp) {
  pg_k = 0;
  do
  :: pg_k < pgN ->
     if
     :: pg_k == 0 -> x_ = pg_x0; y_ = pg_t0; gw_f = pg_f0; gw_p = pg_p0; gw_s = pg_s0; gw_l = pg_l0; gw_fl = pg_fl0; o1 = pg_c0
     :: else -> x_ = pg_x1; y_ = pg_t1; gw_f = pg_f1; gw_p = pg_p1; gw_s = pg_s1; gw_l = pg_l1; gw_fl = pg_fl1; o1 = pg_c1
     fi;
     if
     :: tok[x_] == y_ && PENDING(x_) && (ph[x_] != confirming || o1) -> grantW(pp, x_, gw_f, gw_p, gw_s, gw_l, gw_fl)
     :: else -> skip
     fi;
     pg_k++
  :: else -> break
  od;
  pgN = 0;
  wa_k = 0;
  do
  :: wa_k < waN ->
     if
     :: wa_k == 0 -> wa_x = wa_x0; wa_m = wa_m0
     :: wa_k == 1 -> wa_x = wa_x1; wa_m = wa_m1
     :: else -> wa_x = wa_x2; wa_m = wa_m2
     fi;
     if
     :: PENDING(wa_x) -> waitAgain(pp, wa_x, wa_m)
     :: else -> skip
     fi;
     wa_k++
  :: else -> break
  od;
  waN = 0
}

/* RedisLock.renew: an owner-checked extension of the lease (extend script), sent only while the
   lease as last confirmed runs; its run at Redis comes in a later step (the outbox), after the
   clock may have moved. Once the lease has run out (the renewal fell due during a stall: timers
   run before I/O) nothing is sent and the holder is told at once (expire). */
inline renew(pp, x) {
  TR("RENEW w%d now %d lend %d\n", x, now, lend[x]);
#ifndef BROKEN_LATE_RENEWAL
  if
  :: now >= lend[x] -> told[x] = true                 /* expire */
  :: else ->
#endif
     renews++;
     rinf[x] = true;
#ifdef BROKEN_LATE_RENEWAL
     rsent[x] = now;
#endif
     outPush(pp, OREN, x, lten[x], now, 0)
#ifndef BROKEN_LATE_RENEWAL
  fi
#endif
}

/* RedisLock.renewed: the renewal's reply. Success proves the key stayed the holding's from before its
   lease ended until Redis ran it: the lease counts from when it was sent, unless the holder was
   told meanwhile (then it stays lost); failure (not its own any more) tells it. */
inline onRenewed(pp) {
  /* r2 holder, r3 token, r4 ours, r8 sentAt */
  rinf[r2] = false;
  if
  :: lk[r2] == 1 && !told[r2] && r4 -> lend[r2] = r8 + L; checkP1()
  :: lk[r2] == 1 && !told[r2] && !r4 -> told[r2] = true
  :: else -> skip
  fi
}

/* a holder's write: it reads lock.lost first (RedisLock.expiredNow: the lease deadline against the clock) */
inline write(pp, x) {
  TR("WRITE w%d now %d lend %d told %d\n", x, now, lend[x], told[x]);
#ifndef BROKEN_LOST_READ
  if :: now >= UNTIL(x) -> told[x] = true :: else -> skip fi;
#endif
  if
  :: !told[x] && lep[x] == epoch ->
     p1_n = 0; p1_y = 0;
     do
     :: p1_y < NW ->
        if :: p1_y != x && lk[p1_y] == 1 && !told[p1_y] && now < UNTIL(p1_y) && lep[p1_y] == epoch -> p1_n++ :: else -> skip fi;
        p1_y++
     :: else -> break
     od;
     assert(p1_n == 0)              /* P1: the writer is the only holder not told */
  :: else -> skip
  fi;
  assert(now < lend[x] || told[x]);   /* P6: past its lease as last confirmed (renewals included), its read tells it before it writes */
  wr[x] = true
}

#ifndef BROKEN_LATE_RENEWAL
#define GUARD(y)
#else
#define GUARD(y) && !rinf[y]      /* the old guard left a holder with a renewal in flight to its reply */
#endif
#define DONE(y) (arr[y] && (ph[y] == gave_up || (ph[y] == granted && lk[y] == 2)))
#define ALLDONE(p) (DONE(WB(p)) && (WN(p) < 2 || DONE(WB(p) + 1)) && (WN(p) < 3 || DONE(WB(p) + 2)))
#define HOLDING(p, i) (i < WN(p) && lk[WB(p) + i] == 1)
#define WAITING(p, i) (i < WN(p) && PENDING(WB(p) + i))
#define HASPLACE(p) ((N0 > 0 && PW(0) == p && arr[0] && ph[0] == queued) || (PW(1) == p && arr[1] && ph[1] == queued) || (NW > 2 && PW(2) == p && arr[2] && ph[2] == queued) || (NW > 3 && PW(3) == p && arr[3] && ph[3] == queued))

proctype process(byte p) {
  do
  :: atomic { !crashed[p] && nxt[p] < WN(p) ->
       /* a caller of acquire: a new waiter (send), which rides or sends its acquire */
       x_ = WB(p) + nxt[p]; nxt[p]++;
       TR("ARRIVE w%d\n", x_);
#ifdef MAXP
       admission(p);
       if
       :: mp_n >= (mp_h -> MAXP : MAXP + 1) ->
          /* refused at once (LockBusyError 'max-pending'): no waiter */
          arr[x_] = true; ph[x_] = gave_up; rfz[x_] = true; anc[x_] = NONE; ntc[x_] = FINF; fol[x_] = NONE
       :: else ->
#endif
       arr[x_] = true; ph[x_] = sending; anc[x_] = NONE; ntc[x_] = FINF; fol[x_] = NONE;
       newTok(x_);
       ride(p, x_);
       if
       :: !rd_ok -> enqueue(p, x_)
       :: else -> skip
       fi
#ifdef MAXP
       fi
#endif
     }
  :: atomic { !crashed[p] && nempty(rep[p]) ->
       rep[p]?r1, r2, r3, r4, r5, r6, r7, r8, r9, r11, r12, r13, r14, r15, r16, r10;
       pgN = 0; waN = 0;
       TR("p%d REPLY kind %d w %d tok %d s %d\n", p, r1, r2, r3, r4);
       if
       :: r1 == RACQ -> onAcquire(p)
       :: r1 == RREL -> onRelease(p)
       :: r1 == RLEAVE -> handedOver(p, r11, r12, r13, r14, r8)
       :: r1 == RCHK -> onCheck(p)
       :: r1 == RCONF -> onConfirm(p)
       :: r1 == RREN -> onRenewed(p)
       fi;
       runAfter(p)
     }
  :: atomic { !crashed[p] && nempty(msg[p]) ->
       msg[p]?r1, r2, r3, r4, r5;
       pgN = 0; waN = 0;
       TR("p%d MSG kind %d %d %d %d\n", p, r1, r2, r3, r4);
       onMessage(p);
       runAfter(p)
     }
  /* a call reaches Redis: its script runs (one atomic step) */
  :: atomic { !crashed[p] && nempty(out[p]) ->
       out[p]?o1, o2, o3, o4, o5;
       if
       :: o1 == OACQ && (ph[o2] == granted || ph[o2] == gave_up) -> lead(p, o2)   /* settled: dropped unsent (RedisWaiter.skip); its followers ride or queue */
       :: o1 == OACQ && !(ph[o2] == granted || ph[o2] == gave_up) -> acquireS(o2, o3, p)
       :: o1 == OLEAVE -> leaveS(o3, p)
       :: o1 == OREL -> releaseS(o2, o3, o4, o5, p)
       :: o1 == OCHK -> checkS(p)
       :: o1 == OCONF ->
          expire();
          cf_o = (owner == o3);
          if :: cf_o -> oexp = now + L :: else -> skip fi;
          pushRep(p, RCONF, o2, o3, cf_o, 0, 0, 0, now, 0, 0, 0, 0, 0, 0, 0, 0)
       :: o1 == OREN ->
          /* extend.lua: GET == token, then PEXPIRE (o4: when the renewal was sent) */
          expire();
          cf_o = (owner == o3);
          if :: cf_o -> oexp = now + L :: else -> skip fi;
          TR("EXTEND w%d tok %d sent %d -> %d\n", o2, o3, o4, cf_o);
          pushRep(p, RREN, o2, o3, cf_o, 0, 0, 0, o4, 0, 0, 0, 0, 0, 0, 0, 0)
       fi
     }
  /* a holder's write: it reads lock.lost (the lease deadline against the clock) */
  :: atomic { !crashed[p] && HOLDING(p, 0) && !wr[WB(p)] -> x_ = WB(p); write(p, x_) }
  :: atomic { !crashed[p] && HOLDING(p, 1) && !wr[WB(p) + 1] -> x_ = WB(p) + 1; write(p, x_) }
  :: atomic { !crashed[p] && HOLDING(p, 2) && !wr[WB(p) + 2] -> x_ = WB(p) + 2; write(p, x_) }
  /* its release */
  :: atomic { !crashed[p] && HOLDING(p, 0) && wr[WB(p)] -> x_ = WB(p); release(p, x_) }
  :: atomic { !crashed[p] && HOLDING(p, 1) && wr[WB(p) + 1] -> x_ = WB(p) + 1; release(p, x_) }
  :: atomic { !crashed[p] && HOLDING(p, 2) && wr[WB(p) + 2] -> x_ = WB(p) + 2; release(p, x_) }
  /* the lease-end guard timer: it tells the holder at the lease's end, renewal in flight or not */
  :: atomic { !crashed[p] && HOLDING(p, 0) && !told[WB(p)] && now >= lend[WB(p)] GUARD(WB(p)) -> told[WB(p)] = true }
  :: atomic { !crashed[p] && HOLDING(p, 1) && !told[WB(p) + 1] && now >= lend[WB(p) + 1] GUARD(WB(p) + 1) -> told[WB(p) + 1] = true }
  :: atomic { !crashed[p] && HOLDING(p, 2) && !told[WB(p) + 2] && now >= lend[WB(p) + 2] GUARD(WB(p) + 2) -> told[WB(p) + 2] = true }
  /* the renewal timer (any moment while held, one renewal in flight at a time; at most RENEWS in a run) */
  :: atomic { !crashed[p] && renews < RENEWS && HOLDING(p, 0) && !told[WB(p)] && !rinf[WB(p)] -> x_ = WB(p); renew(p, x_) }
  :: atomic { !crashed[p] && renews < RENEWS && HOLDING(p, 1) && !told[WB(p) + 1] && !rinf[WB(p) + 1] -> x_ = WB(p) + 1; renew(p, x_) }
  :: atomic { !crashed[p] && renews < RENEWS && HOLDING(p, 2) && !told[WB(p) + 2] && !rinf[WB(p) + 2] -> x_ = WB(p) + 2; renew(p, x_) }
  /* the heart-beat (heartbeat script) */
  :: atomic { !crashed[p] && !checking[p] && (due[p] || nempty(msg[p])) && HASPLACE(p) -> due[p] = false; checking[p] = true; outPush(p, OCHK, NONE, 0, 0, 0) }
  /* the stall monitor's tick: the loop is responsive */
  :: atomic { !crashed[p] && resp[p] < now && empty(msg[p]) -> resp[p] = now }
  /* after a restart: the reconnect re-checks every held lock (extend, owner-checked) */
  :: atomic { !crashed[p] && rc[p] ->
       rc[p] = false;
       x_ = WB(p);
       do
       :: x_ < WB(p) + WN(p) ->
          if
          :: lk[x_] == 1 && !told[x_] && !(LIVE && owner == lten[x_]) -> told[x_] = true
          :: lk[x_] == 1 && !told[x_] && LIVE && owner == lten[x_] -> oexp = now + L; lend[x_] = now + L
          :: else -> skip
          fi;
          x_++
       :: else -> break
       od
     }
  /* a waiter gives up (its budget ran out, or aborted): one early, any once the clock is at TMAX */
  :: atomic { !crashed[p] && (giveups < GIVEUPS || (TMAX > 0 && now == TMAX)) && WAITING(p, 0) -> giveups++; x_ = WB(p); giveUp(p, x_) }
  :: atomic { !crashed[p] && (giveups < GIVEUPS || (TMAX > 0 && now == TMAX)) && WAITING(p, 1) -> giveups++; x_ = WB(p) + 1; giveUp(p, x_) }
  :: atomic { !crashed[p] && (giveups < GIVEUPS || (TMAX > 0 && now == TMAX)) && WAITING(p, 2) -> giveups++; x_ = WB(p) + 2; giveUp(p, x_) }
  :: atomic { crashed[p] -> break }
  :: atomic { !crashed[p] && nxt[p] == WN(p) && ALLDONE(p) && empty(rep[p]) && empty(out[p]) -> ended[p] = true; break }
  od
}

/* the faults, and the clock */
proctype faults() {
end_faults:
  do
  :: atomic { now < TMAX -> now++; due[0] = true; due[1] = true; TR("TICK %d\n", now) }
  :: atomic { crashes < CRASHES && !ended[0] -> crashes++; crashed[0] = true; TR("CRASH 0\n") }
  :: atomic { crashes < CRASHES && !ended[1] -> crashes++; crashed[1] = true; TR("CRASH 1\n") }
  :: atomic { restarts < RESTARTS ->
       /* restart: Redis loses every key (no persistence); the connections come back */
       restarts++; epoch++; TR("RESTART\n");
       owner = 0; oexp = 0; cEx = false;
       hd_i = 0;
       do
       :: hd_i < QN -> qT[hd_i] = 0; qP[hd_i] = 0; qB[hd_i] = 0; qBy[hd_i] = 0; hd_i++
       :: else -> break
       od;
       qLen = 0;
       rc[0] = !ended[0]; rc[1] = !ended[1]; due[0] = true; due[1] = true
     }
  :: atomic { losts < LOSTS && nempty(msg[0]) -> losts++; due[0] = true; msg[0]?r1, r2, r3, r4, r5; TR("LOST p0 msg\n") }
  :: atomic { losts < LOSTS && nempty(msg[1]) -> losts++; due[1] = true; msg[1]?r1, r2, r3, r4, r5; TR("LOST p1 msg\n") }
  :: atomic { dups < DUPS && nempty(msg[0]) && nfull(msg[0]) -> dups++; msg[0]?<r1, r2, r3, r4, r5>; msg[0]!r1, r2, r3, r4, r5 }
  :: atomic { dups < DUPS && nempty(msg[1]) && nfull(msg[1]) -> dups++; msg[1]?<r1, r2, r3, r4, r5>; msg[1]!r1, r2, r3, r4, r5 }
  od
}

init {
  atomic {
    x_ = 0;
    do
    :: x_ < NW -> anc[x_] = NONE; fol[x_] = NONE; ntc[x_] = FINF; x_++
    :: else -> break
    od;
    ld[0] = NONE; ld[1] = NONE;
    run process(0);
    run process(1);
    run faults()
  }
  /* P5: every process ends (else SPIN reports an invalid end state) */
  atomic {
    (ended[0] || crashed[0]) && (ended[1] || crashed[1]) ->
    /* after a restart a stale tenure's local hand-off may leave K with a ghost (a place Redis granted
       meanwhile, its message read after the release's reply): its lease, at most PX, runs out */
    assert(!(LIVE && !crashed[PT(owner)]) || (restarts > 0 && oexp <= now + PX));   /* P5: no live process holds K at the end */
    x_ = 0;
    do
    :: x_ < qLen -> assert(crashed[PT(qT[x_])] || restarts > 0); x_++   /* P5: nor has a place */
    :: else -> break
    od;
#ifdef NO_FAULTS
    x_ = 0;
    do
#ifdef MAXP
    :: x_ < NW -> assert(lk[x_] == 2 || rfz[x_]); x_++   /* P5: without faults every waiter is served (or refused for maxPending) */
#else
    :: x_ < NW -> assert(lk[x_] == 2); x_++   /* P5: without faults every waiter is served */
#endif
    :: else -> break
    od
#endif
  }
}
