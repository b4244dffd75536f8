/*
 * The PostgreSQL hand-off protocol of nestjs-serialized (the postgres driver), as a
 * Promela model for SPIN. docs/protocol.md presents it; models/VOCABULARY.md names its
 * states and transitions (the code's names are these).
 *
 * One key K. Two processes (one PostgresLockProvider each): process 0 has NC0 callers
 * and two lock sessions, process 1 has one caller and one session. Every caller asks
 * for K once, holds it and releases it. The server is atomic steps on shared state:
 * the advisory lock of K (owner session and its reentrant count), its lock queue
 * (sessions blocked in pg_advisory_lock, FIFO), the fencing sequence (its last value;
 * one nextval reserves a block of BLK tokens). A statement runs on the server in one
 * step and its reply is handled by the process in a later step, so anything may happen
 * in between: another process's steps, the session's termination
 * (pg_terminate_backend: the server frees the session's locks at once; the process
 * learns it later — possibly before it handles a reply it had already read), a
 * lock_timeout, the caller giving up.
 *
 * What the process does (libs/serialized/src/providers/postgres/):
 *   - the local FIFO of a key (LockLines, the local layer): only the caller whose turn it is talks
 *     to the server; the others wait for their turn, or for a lock handed on locally;
 *   - tryLock on a shared session: pg_try_advisory_lock and the token: the session's
 *     block while the sequence's last value is still the block's draw, else nextval;
 *   - busy: a session of its own and lockWait (pg_advisory_lock bounded by
 *     lock_timeout); the server grants it when K comes free or times it out — and may
 *     do both at once (the timeout-grant race: PostgreSQL keeps the lock-timeout
 *     interrupt pending after the grant, and the session keeps the lock);
 *   - a reply on a session the process knows has ended grants nothing: the caller asks
 *     again on another session (the dead-connection check); a holder registered on a
 *     session known to have ended is told at once (LockSession.hold);
 *   - release: a local hand-off to the next caller of its process with the block's next
 *     token (cohort: at most MLH in a row while a caller of another process waits in
 *     the server; strict: only when nobody waits there, asked by the unlock statement
 *     itself), else unlock; a session's end tells the holders on it;
 *   - claims: each session counts the locks of K its statements may have taken until a
 *     reply proves otherwise (session.claims.ts): the session audit's invariant.
 * A statement's batching with other keys' (StatementBatch) changes no step of K's.
 *
 * Bounds (defaults; -D overrides): NC0 = 3 callers in process 0 (so cohort mode can
 * pass a waiter of process 1), 1 in process 1; sessions 2 + 1; BLK = 3 tokens per
 * draw; MLH (maxLocalHandOffs) = 1; KILLS = 1 session terminated; GIVEUPS = 1 caller
 * giving up while it waits in the server; the timeout-grant race and lock_timeout at
 * any time. COHORT=1 checks cohort mode, else strict. NO_FAULTS: none of these (no
 * termination, no giving up, budgets long enough that lock_timeout never ends a wait):
 * then every caller must be served (P5). A process that stalls is a process whose steps
 * come late: every interleaving is explored, so stalls are in the model; PostgreSQL
 * has no lease to run out meanwhile (a session lock lasts as long as its session).
 *
 * Properties (asserted; the names are docs/protocol.md's):
 *   P1 mutual exclusion among holders not yet told they lost the lock (a holder whose
 *      session the server ended has lost it; it is told when its process learns)
 *   P2 fencing tokens strictly increase in grant order, across server grants and local
 *      hand-offs (a grant made on a session the server still holds K on; one handed on
 *      a session that has ended, unbeknownst, belongs to a holder that has lost the
 *      lock — it is told when its process learns, and its writes are fenced off)
 *   P3 strict mode: a local hand-off only while no session of another process waits for K
 *   P4 cohort mode: a caller of another process waiting in the server is passed by at
 *      most MLH local hand-offs
 *   P5 no deadlock (every caller ends: holds and releases, or gives up; no invalid end
 *      state), at the end K is free and nobody waits for it, and without faults every
 *      caller is served
 *   P6 a holder on a session known to have ended is told before it finishes
 *   INV every advisory lock the server shows for a live session is claimed by it (the
 *      session audit's invariant), in every state
 *   P8 arrival order ("FIFO in a process and no process starved"): a process's callers
 *      take their turn in the local line — and so K, from the server or handed on — in
 *      their arrival in the process (a ghost: who waited when each came): when the turn
 *      passes, no caller of the process that came earlier still waits for it; and a try takes a free K only
 *      when no session waits in the server (the server grants the first session of its
 *      queue: its FIFO). Across processes the exceptions are local hand-offs: strict mode
 *      only while no session waits (P3), cohort mode within its bound (P4)
 *
 * Broken variants (each the model with one guard removed; SPIN must refute each):
 *   BROKEN_DEAD_CHECK     a grant read on a session known to have ended makes a holder,
 *                         untold (the reply check in tryLock/lockWait, and hold())
 *   BROKEN_GIVE_BACK      a timed-out wait that was granted is not given back (lockWait)
 *   BROKEN_LAST_VALUE     a block's token is used without the last-value check (the try statement)
 *   BROKEN_LEARN_TELLS    a session's end does not tell the holders on it (LockSession.kill)
 *   BROKEN_COHORT_BOUND   cohort mode hands off locally without the MLH bound (COHORT=1)
 *   BROKEN_STRICT_WAITED  strict mode hands off without asking whether a session waits (COHORT=0)
 *   BROKEN_ABORT_DISCARD  a wait whose caller gave up returns its session to the pool
 *                         instead of ending it (LockAttempt.windDown)
 *   BROKEN_LOCAL_FIFO     the turn passes to the last caller of the local line, ahead of
 *                         earlier ones (LockLines)
 */

#ifndef NC0
#define NC0 3
#endif
#define NC (NC0 + 1)          /* callers: 0 .. NC0-1 in process 0, NC0 in process 1 */
#define NS 3                  /* sessions: 0, 1 of process 0; 2 of process 1 */
#define NONE 255
#ifndef BLK
#define BLK 3
#endif
#ifndef MLH
#define MLH 1
#endif
#ifndef COHORT
#define COHORT 0
#endif
#ifdef NO_FAULTS
#define KILLS 0
#define GIVEUPS 0
#endif
#ifndef KILLS
#define KILLS 1
#endif
#ifndef GIVEUPS
#define GIVEUPS 1
#endif

#define PROC(c) (c < NC0 -> 0 : 1)
#define PROC_OF(s) (s < 2 -> 0 : 1)

/* ------------------------------------------------------------------ the server */
byte owner = NONE;            /* the session holding K's advisory lock */
byte cnt = 0;                 /* its reentrant count */
byte wq[NS];                  /* sessions blocked in pg_advisory_lock(K), FIFO */
byte wqLen = 0;
byte seq = 0;                 /* the fencing sequence's last value */
bool alive[NS];               /* the server's session exists */
byte kills = 0;

/* --------------------------------------------------------------- the processes */
bool knownDead[NS];           /* the process learned that the session ended */
bool exclusive[NS];           /* a blocking wait has the session to itself */
byte drawn[NS];               /* the session's block: the draw that began it (0: none) */
byte nxt[NS];                 /* the block's next token */
byte claims[NS];              /* locks of K the session's statements may have taken */
bool turn[2];                 /* a caller of the process owns K in the process */
byte lq[2 * NC];              /* each process's local FIFO of callers waiting for their turn */
byte lqLen[2];
byte handed[2];               /* a lock handed on locally to the next caller: its session (NONE: none) */
byte handedToken[2];
byte run_[2];                 /* local hand-offs in a row */
byte ahead = 0;               /* local hand-offs while a caller of the other process waits in the server */
byte lastToken = 0;
byte giveups = 0;
byte finished = 0;

mtype = { ARRIVING, QUEUED_LOCAL, ASKING, WAITING, HOLDING, RELEASED, GAVE_UP };
mtype ph[NC];
byte sess[NC];
byte token[NC];
bool told[NC];
bool isTurn[NC];
byte earlier[NC];             /* ghost (P8): the callers of its process that waited for their turn when it came (a bit each) */

/* temporaries, used only inside atomic steps and reset after them */
byte i_, j_, n_;

inline dropFromQueue(s) {
  i_ = 0;
  do
  :: i_ < wqLen && wq[i_] != s -> i_++
  :: i_ < wqLen && wq[i_] == s ->
     j_ = i_;
     do
     :: j_ + 1 < wqLen -> wq[j_] = wq[j_ + 1]; j_++
     :: else -> break
     od;
     wq[wqLen - 1] = 0;
     wqLen--;
     break
  :: i_ >= wqLen -> break
  od;
  i_ = 0; j_ = 0
}

/* K comes free: the first session in the server's queue gets it */
inline grantNext() {
  if
  :: wqLen > 0 -> owner = wq[0]; cnt = 1; dropFromQueue(owner)
  :: else -> owner = NONE; cnt = 0
  fi
}

inline serverUnlock(s) {
  if
  :: owner == s && cnt > 1 -> cnt--
  :: owner == s && cnt == 1 -> grantNext()
  :: else -> skip               /* pg_advisory_unlock answers false */
  fi
}

/* the server ends a session: its locks go with it, it leaves the queue */
inline endSession(s) {
  alive[s] = false;
  if
  :: owner == s -> grantNext()
  :: else -> dropFromQueue(s)
  fi
}

/* the process learns that session s ended: the holders on it are told */
inline learnDeath(s) {
  knownDead[s] = true;
  claims[s] = 0;
  exclusive[s] = false;
#ifndef BROKEN_LEARN_TELLS
  i_ = 0;
  do
  :: i_ < NC -> if :: ph[i_] == HOLDING && sess[i_] == s -> told[i_] = true :: else -> skip fi; i_++
  :: else -> break
  od;
  i_ = 0
#endif
}

inline checkP1() {
  i_ = 0; n_ = 0;
  do
  :: i_ < NC -> if :: ph[i_] == HOLDING && !told[i_] && alive[sess[i_]] -> n_++ :: else -> skip fi; i_++
  :: else -> break
  od;
  assert(n_ <= 1);              /* P1 */
  i_ = 0; n_ = 0
}

/* `hold`: caller c holds K on session s with token t */
inline hold(c, s, t) {
  ph[c] = HOLDING; sess[c] = s; token[c] = t;
#ifndef BROKEN_DEAD_CHECK
  told[c] = knownDead[s];       /* LockSession.hold: a session known dead tells at once */
#endif
  checkP1()
}

/* the token of a grant from the server; `offered`: a try, which may take the block's next */
inline drawFor(s, t, offered) {
  if
#ifndef BROKEN_LAST_VALUE
  :: offered && drawn[s] != 0 && seq == drawn[s] && nxt[s] < drawn[s] + BLK -> t = nxt[s]; nxt[s]++
#else
  :: offered && drawn[s] != 0 && nxt[s] < drawn[s] + BLK -> t = nxt[s]; nxt[s]++
#endif
  :: else -> seq = seq + BLK; t = seq; drawn[s] = seq; nxt[s] = seq + 1
  fi
}

inline grantToken(s, t, offered) {
  drawFor(s, t, offered);
  assert(t > lastToken);        /* P2: a server grant (its session holds K on the server) */
  lastToken = t
}


/* the turn passes to the next local caller, or K is free in the process */
inline passTurn(c) {
  isTurn[c] = false;
  if
  :: lqLen[PROC(c)] > 0 ->
#ifndef BROKEN_LOCAL_FIFO
     i_ = 0;                             /* the first of the local line */
#else
     i_ = lqLen[PROC(c)] - 1;            /* the last: a caller let ahead of earlier ones */
#endif
     n_ = lq[PROC(c) * NC + i_];
     isTurn[n_] = true;
     /* P8: the turn (and so K, by the server or handed on) goes to a caller none of whose
        earlier callers still waits for it; it leaves the others' `earlier` (canonical: the
        ghost then mirrors the line and adds no state) */
     j_ = 0;
     do
     :: j_ < NC ->
        assert(!((earlier[n_] & (1 << j_)) != 0 && ph[j_] == QUEUED_LOCAL && !isTurn[j_]));   /* P8: local arrival order */
        earlier[j_] = earlier[j_] & ~(1 << n_);
        j_++
     :: else -> break
     od;
     earlier[n_] = 0;
     j_ = 0; n_ = 0;
     do
     :: i_ + 1 < lqLen[PROC(c)] -> lq[PROC(c) * NC + i_] = lq[PROC(c) * NC + i_ + 1]; i_++
     :: else -> break
     od;
     lq[PROC(c) * NC + lqLen[PROC(c)] - 1] = 0;
     lqLen[PROC(c)]--;
     i_ = 0
  :: else -> turn[PROC(c)] = false
  fi
}

/* a session of process p for a shared use (a try) */
inline pickShared(p, s) {
  if
  :: p == 0 && alive[0] && !knownDead[0] && !exclusive[0] -> s = 0
  :: p == 0 && alive[1] && !knownDead[1] && !exclusive[1] -> s = 1
  :: p == 1 && alive[2] && !knownDead[2] && !exclusive[2] -> s = 2
  :: else -> s = NONE
  fi
}

/* a session of process p a blocking wait may have to itself (one not holding K) */
inline pickOwn(p, s) {
  if
  :: p == 0 && alive[0] && !knownDead[0] && !exclusive[0] && owner != 0 -> s = 0
  :: p == 0 && alive[1] && !knownDead[1] && !exclusive[1] && owner != 1 -> s = 1
  :: p == 1 && alive[2] && !knownDead[2] && !exclusive[2] && owner != 2 -> s = 2
  :: else -> s = NONE
  fi
}

proctype caller(byte c) {
  byte s = NONE;
  byte t = 0;
  bool granted = false;
  bool racedTimeout = false;
  bool retried = false;

  /* wait: take K in the process, or queue behind the caller whose turn it is */
  atomic {
    if
    :: !turn[PROC(c)] -> turn[PROC(c)] = true; isTurn[c] = true; ph[c] = ASKING
    :: else ->
       /* P8's ghost: the callers of the process waiting for their turn came before it */
       i_ = 0;
       do
       :: i_ < NC -> if :: PROC(i_) == PROC(c) && ph[i_] == QUEUED_LOCAL && !isTurn[i_] -> earlier[c] = earlier[c] | (1 << i_) :: else -> skip fi; i_++
       :: else -> break
       od;
       i_ = 0;
       lq[PROC(c) * NC + lqLen[PROC(c)]] = c; lqLen[PROC(c)]++; ph[c] = QUEUED_LOCAL
    fi
  }
  atomic {
    isTurn[c] -> ph[c] = ASKING;
    /* take: a lock handed on locally is the caller's if its session is not known to have ended */
    if
    :: handed[PROC(c)] != NONE ->
       s = handed[PROC(c)]; t = handedToken[PROC(c)]; handed[PROC(c)] = NONE; handedToken[PROC(c)] = 0;
       if
       :: !knownDead[s] -> hold(c, s, t); granted = true
       :: else -> run_[PROC(c)] = 0      /* PostgresBackend.adopt: its session ended; ask the server */
       fi
    :: else -> skip
    fi
  }
  if
  :: granted -> goto holding
  :: else -> skip
  fi;

tryLock:
  /* the try statement on the server */
  atomic {
    pickShared(PROC(c), s);
    if
    :: s == NONE -> goto giveUp           /* no session left: LockBackendError */
    :: else -> skip
    fi;
    claims[s]++;
    if
    :: alive[s] && owner == NONE && wqLen == 0 ->
       assert(wqLen == 0);   /* P8: a try takes a free K only when no session waits for it */
       owner = s; cnt = 1; grantToken(s, t, true); granted = true
    :: alive[s] && owner == s -> cnt++; grantToken(s, t, true); granted = true   /* advisory locks stack per session */
    :: else -> granted = false
    fi
  }
  /* onTryReply: handled later; the session may have ended meanwhile, known or not */
  atomic {
    if
#ifndef BROKEN_DEAD_CHECK
    :: knownDead[s] ->
       /* read on a session that ended: it grants nothing (the server freed the lock) */
       granted = false;
       if
       :: !retried -> retried = true; goto tryLock
       :: else -> goto giveUp
       fi
#endif
    :: granted -> hold(c, s, t); goto holding
    :: else -> claims[s]--
    fi
  }

  /* lockWait on a session of its own */
  atomic {
    pickOwn(PROC(c), s);
    if
    :: s == NONE -> goto giveUp
    :: else -> skip
    fi;
    exclusive[s] = true;
    claims[s]++;
    ph[c] = WAITING;
    if
    :: alive[s] && owner == NONE && wqLen == 0 -> owner = s; cnt = 1
    :: else -> wq[wqLen] = s; wqLen++
    fi
  }
  /* the wait ends: granted (perhaps reported as a lock timeout), timed out, given up, or its session ended */
  if
  :: atomic {
       owner == s && alive[s] && !knownDead[s] ->
       grantToken(s, t, false);
       if
       :: true -> racedTimeout = false
#ifndef NO_FAULTS
       :: true -> racedTimeout = true     /* the timeout-grant race: granted, reported as 55P03 */
#endif
       fi;
       exclusive[s] = false;
       if
       :: racedTimeout ->
#ifndef BROKEN_GIVE_BACK
          serverUnlock(s);                /* lockWait gives back whatever the wait took */
#endif
          claims[s]--;
          goto giveUp
       :: else -> hold(c, s, t); goto holding
       fi
     }
#ifndef NO_FAULTS
  :: atomic {
       owner != s && alive[s] && !knownDead[s] ->   /* lock_timeout: still in the queue, nothing held */
       dropFromQueue(s);
       claims[s]--;
       exclusive[s] = false;
       goto giveUp
     }
#endif
  :: atomic {
       giveups < GIVEUPS && alive[s] && !knownDead[s] ->   /* giveUp while waiting: CancelRequest */
       giveups++;
#ifndef BROKEN_ABORT_DISCARD
       endSession(s);                     /* the session is ended: a lock granted in that instant goes with it */
       learnDeath(s);
#else
       if
       :: owner != s -> dropFromQueue(s)  /* cancelled in the queue */
       :: else -> skip                    /* granted in that instant: the session keeps it */
       fi;
       claims[s]--;
       exclusive[s] = false;
#endif
       goto giveUp
     }
  :: atomic { knownDead[s] -> goto giveUp }   /* the session ended while it waited: LockBackendError */
  fi;

holding:
  /* release: a local hand-off if it may, else unlock */
  atomic {
    granted = (lqLen[PROC(c)] > 0 && !knownDead[s] && nxt[s] < drawn[s] + BLK);
#ifndef BROKEN_COHORT_BOUND
    granted = granted && run_[PROC(c)] < MLH;
#endif
#if !COHORT
#ifndef BROKEN_STRICT_WAITED
    granted = granted && (wqLen == 0);     /* unlockIfWaited keeps it only when no session waits (holds the wait mark: its lock statement, the same step as joining the queue) */
#endif
#endif
    if
    :: granted ->
       /* passOn: the next caller of the process holds K on this session, with the block's next token */
       if
       :: wqLen > 0 && PROC_OF(wq[0]) != PROC(c) ->
          ahead++;
#if COHORT
          assert(ahead <= MLH)            /* P4 */
#else
          assert(false)                   /* P3 */
#endif
       :: else -> skip
       fi;
       handed[PROC(c)] = s; handedToken[PROC(c)] = nxt[s]; nxt[s]++;
       if
       :: alive[s] -> assert(handedToken[PROC(c)] > lastToken); lastToken = handedToken[PROC(c)]   /* P2: a local hand-off */
       :: else -> skip
       fi;
       run_[PROC(c)]++;
       assert(!knownDead[s] || told[c]);  /* P6 */
       ph[c] = RELEASED
    :: else ->
       if
       :: alive[s] -> serverUnlock(s)
       :: !alive[s] && !knownDead[s] -> told[c] = true   /* the unlock fails: a loss found at release is told */
       :: else -> skip                                   /* known dead: nothing to send (told then) */
       fi;
       assert(!knownDead[s] || told[c]);  /* P6 */
       if :: claims[s] > 0 -> claims[s]-- :: else -> skip fi;
       run_[PROC(c)] = 0;
       ahead = 0;
       ph[c] = RELEASED
    fi;
    passTurn(c);
    finished++
  }
  goto done;

giveUp:
  atomic {
    ph[c] = GAVE_UP;
    passTurn(c);
    finished++
  }
done:
  skip
}

/* pg_terminate_backend of one session, at most KILLS times */
proctype terminator() {
  do
  :: atomic { kills < KILLS && alive[0] -> kills++; endSession(0) }
  :: atomic { kills < KILLS && alive[1] -> kills++; endSession(1) }
  :: atomic { kills < KILLS && alive[2] -> kills++; endSession(2) }
  :: kills >= KILLS -> break
  :: finished == NC -> break
  od
}

/* a process learns, some time after, that a session of its ended (the socket's end, a failed statement) */
proctype learner() {
end_learner:
  do
  :: atomic { !alive[0] && !knownDead[0] -> learnDeath(0) }
  :: atomic { !alive[1] && !knownDead[1] -> learnDeath(1) }
  :: atomic { !alive[2] && !knownDead[2] -> learnDeath(2) }
  od
}

/* INV, in every state: every advisory lock of a live session is claimed by it */
proctype audit() {
end_audit:
  do
  :: atomic { owner != NONE && alive[owner] && !knownDead[owner] && claims[owner] == 0 -> assert(false) }   /* INV */
  od
}

init {
  atomic {
    i_ = 0;
    do
    :: i_ < NS -> alive[i_] = true; i_++
    :: else -> break
    od;
    handed[0] = NONE; handed[1] = NONE;
    i_ = 0;
    do
    :: i_ < NC -> ph[i_] = ARRIVING; sess[i_] = NONE; i_++
    :: else -> break
    od;
    i_ = 0;
    do
    :: i_ < NC -> run caller(i_); i_++
    :: else -> break
    od;
    i_ = 0;
    run terminator();
    run learner();
    run audit()
  }
  /* P5: every caller ends (otherwise SPIN reports an invalid end state), then K is free and nobody waits */
  finished == NC;
  assert(owner == NONE || !alive[owner]);   /* P5 */
  assert(wqLen == 0);                       /* P5 */
#ifdef NO_FAULTS
  i_ = 0;
  do
  :: i_ < NC -> assert(ph[i_] == RELEASED); i_++   /* P5: without faults every caller is served */
  :: else -> break
  od
#endif
}
