/*
 * Redis fail-over and replica acknowledgements (the redis driver's
 * `replicas: { acks, timeoutMs }`), as a Promela model for SPIN. docs/protocol.md
 * presents it beside the hand-off model (models/redis.pml), whose Redis is one server
 * that never fails over; this one is the other way round: the grant and the fencing
 * counter of one key K, two servers, and a fail-over, with the queue, the hand-offs and
 * the leases left to models/redis.pml.
 *
 * Two servers: S0 starts as the master, S1 as its replica (acks = replicas = 1).
 * Replication is asynchronous: at any step the replica may catch up with its master
 * (it copies the master's state as of that moment: replication keeps order, so it
 * always holds a prefix of the master's writes; `rseq` is the master's write count it
 * has, what `WAIT` reads). A fail-over (FAILOVERS, at most 1) promotes S1 with what it
 * has: the master's writes since the last point S1 caught up with are lost there. The
 * old master keeps running and accepting writes — with no replica following it — until
 * the Sentinels demote it, at any later step: then it becomes S1's replica (its state
 * replaced by S1's) and every connection to it is dropped. A process's connection moves
 * to the new master at any step after the fail-over (its fail-over detector, or the
 * demotion's disconnect), and a new connection has written nothing.
 *
 * Each of NP processes runs ATT attempts on K: `acquire` (acquire.lua on the server its
 * connection goes to: a free key is taken with a token from the counter), then `WAIT`
 * (transport/replica.acks.ts): the grant counts only when the server's replica has the
 * write (`rseq >= seq`) and the answer came on the socket the write went out on (the
 * same connection epoch); otherwise (a timeout: at any step while the replica has not
 * caught up, or the socket changed) the grant is undone (owner-checked release) and the
 * caller fails closed. A holder writes (where P1 and P2 are checked), then releases
 * (owner-checked, on the server its connection goes to now). A holder whose connection
 * moved re-checks its lock there (RedisLock.recheck, owner-checked): gone, it is told.
 * The confirmation of every other grant in the code (a hand-off by release, message or
 * heart-beat: commands.confirm, an owner-checked write with `WAIT` behind it) is the
 * same step: a write on the holder's connection that `WAIT` must see replicated.
 *
 * Properties:
 *   P1 mutual exclusion among holders not told they lost the lock: at a holder's write,
 *      no other holder whose grant counted is untold
 *   P2 fencing tokens strictly increase in grant order: a grant that counts has a token
 *      above every token of a grant that counted before (no token handed out twice)
 *   P5 no deadlock (no invalid end state)
 *
 * Broken variant (SPIN must refute it):
 *   BROKEN_GRANT_BEFORE_ACK  the grant counts when acquire.lua answers, before `WAIT`
 *                            (the provider without `replicas`)
 */

#ifndef NP
#define NP 2
#endif
#ifndef ATT
#define ATT 2
#endif
#ifndef FAILOVERS
#define FAILOVERS 1
#endif

/* the servers' state: the lock key's owner (a process + 1; 0: free), the fencing counter, writes made */
byte own[2];
byte ctr[2];
byte wseq[2];
byte rseq[2];                 /* of server s: its writes its replica has (what WAIT reads) */
bool demoted = false;
byte master = 0;              /* the server the Sentinels name */
bool oldUp = false;           /* after a fail-over: the old master still takes writes (not demoted yet) */
byte failovers = 0;

/* the processes */
byte conn[NP];                /* the server its connection goes to */
byte cep[NP];                 /* its connection's epoch: a new socket after each move */
byte lastTok = 0;             /* ghost: the token of the last grant that counted */

/* A server takes writes while it is the master, or the old master not yet demoted. */
#define WRITABLE(s) ((s) == master || (oldUp && (s) != master))
/* Its replica: S1 follows S0 until the fail-over; after the demotion S0 follows S1. */
#define FOLLOWED(s) (((s) == 0 && failovers == 0) || ((s) == 1 && demoted))

byte holders = 0;             /* bit per process: holds K, its grant counted */
byte told = 0;                /* bit per process: told it lost K */

/* The replica of a followed master catches up with it (any prefix: any moment). */
inline sync(s) {
  d_step {
    own[1 - s] = own[s];
    ctr[1 - s] = ctr[s];
    wseq[1 - s] = wseq[s];
    rseq[s] = wseq[s]
  }
}

active proctype Redis() {
end:
  do
  :: FOLLOWED(0) -> sync(0)
  :: FOLLOWED(1) -> sync(1)
  :: atomic { failovers < FAILOVERS -> failovers++; master = 1; oldUp = true; rseq[1] = wseq[1] }
  :: atomic {
       oldUp ->
       /* the Sentinels demote the old master: its state becomes the new master's, its connections drop */
       oldUp = false; demoted = true;
       own[0] = own[1]; ctr[0] = ctr[1]; wseq[0] = wseq[1]; rseq[1] = wseq[1];
       byte q = 0;
       do
       :: q < NP -> if :: conn[q] == 0 -> conn[q] = 1; cep[q]++ :: else -> skip fi; q++
       :: else -> break
       od
     }
  od
}

proctype Caller(byte me) {
  byte att = 0;
  byte tok, seq, ep, srv;
  bool ok;
  do
  :: att < ATT ->
    att++;
    /* acquire.lua: a free key is taken, with the next token of the counter */
    atomic {
      ok = false;
      if
      :: WRITABLE(conn[me]) && own[conn[me]] == 0 ->
         srv = conn[me]; ctr[srv]++; tok = ctr[srv]; own[srv] = me + 1; wseq[srv]++;
         seq = wseq[srv]; ep = cep[me]; ok = true
      :: else -> skip
      fi
    }
    if
    :: !ok -> skip
    :: ok ->
#ifdef BROKEN_GRANT_BEFORE_ACK
      ok = true;
#else
      /* WAIT behind it: the replica has the write, on the same socket — or the wait times out */
      if
      :: atomic { ep == cep[me] && FOLLOWED(srv) && rseq[srv] >= seq -> ok = true }
      :: ok = false
      fi;
#endif
      if
      :: ok ->
        atomic {
          /* P2: the grant counts: its token is above every token counted before */
          assert(tok > lastTok);   /* P2 */
          lastTok = tok;
          holders = holders | (1 << me)
        }
        /* the holder's write: no other untold holder */
        atomic {
          if
          :: (told & (1 << me)) == 0 ->
             assert((holders & ~told & ~(1 << me)) == 0)   /* P1 */
          :: else -> skip
          fi
        }
        /* released (owner-checked) on the server its connection goes to now */
        atomic {
          if
          :: WRITABLE(conn[me]) && own[conn[me]] == me + 1 -> own[conn[me]] = 0; wseq[conn[me]]++
          :: else -> skip
          fi;
          holders = holders & ~(1 << me);
          told = told & ~(1 << me)
        }
      :: else ->
        /* fail closed: the grant is undone (owner-checked) where the connection goes now */
        atomic {
          if
          :: WRITABLE(conn[me]) && own[conn[me]] == me + 1 -> own[conn[me]] = 0; wseq[conn[me]]++
          :: else -> skip
          fi
        }
      fi
    fi
  :: atomic {
       /* the connection moves to the new master (fail-over detector, or a drop); a holder re-checks its lock there */
       failovers > 0 && conn[me] != master -> conn[me] = master; cep[me]++;
       if
       :: (holders & (1 << me)) != 0 && own[master] != me + 1 -> told = told | (1 << me)
       :: else -> skip
       fi
     }
  :: att == ATT -> break
  od
}

init {
  byte p = 0;
  atomic {
    do
    :: p < NP -> run Caller(p); p++
    :: else -> break
    od
  }
}
