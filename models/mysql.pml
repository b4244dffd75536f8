/*
 * The MySQL / MariaDB protocol of nestjs-serialized (the mysql driver), as a Promela
 * model for SPIN. docs/protocol.md presents it; models/VOCABULARY.md names its states
 * and transitions (the code's names are these).
 *
 * One key K. Two processes (one MysqlLockProvider each): process 0 has NC0 callers
 * and two lock sessions, process 1 has one caller and one session; each process may
 * open one more session once one of its own has ended (the pool replacing it). Every
 * caller asks for K once, holds it and releases it. The server is atomic steps on
 * shared state: the named lock of K (owner session and its count: GET_LOCK stacks per
 * session), its wait queue (sessions blocked in GET_LOCK(name, s)), and the fencing
 * counter row (its last token; one draw reserves a block of BLK tokens; a committed
 * row survives a restart). A statement runs on the server in one step and its reply is
 * handled by the process in a later step, so anything may happen in between: another
 * process's steps, a session's end (KILL: the server frees the session's named locks
 * at once; a server restart: every session ends at once; the process learns it later,
 * possibly after it handled a reply it had already read), the caller giving up.
 *
 * What the process does (libs/serialized/src/providers/mysql/):
 *   - the local FIFO of a key (LockLines, the local layer): only the caller whose turn
 *     it is talks to the server; there is no local hand-off (MySQL cannot say whether
 *     another session waits), so every release goes to the server;
 *   - tryLock on a shared session: GET_LOCK(name, 0) and, in the same round trip, the
 *     counter's value read right after it (MysqlSession.lockAndRead);
 *   - busy: a session of its own and waitLock (GET_LOCK(name, s)), granted when K comes
 *     free; a caller that gives up (abort, or the budget's end) sends KILL QUERY, and
 *     the wait answers NULL — or 1 if the server granted it in that instant;
 *   - grantToken: the session's block's next token while the counter read after the
 *     grant is still the block's end (nobody drew since), else a new draw;
 *   - a reply on a session the process knows has ended grants nothing (the
 *     dead-connection check: MysqlSession.run); a holder registered on a session known
 *     to have ended is told at once (MysqlSession.hold); a session's end tells the
 *     holders on it (MysqlSession.kill);
 *   - windDown: a wait that ended without a holder ends its session, which frees
 *     whatever the wait took (MysqlLockAttempt.windDown);
 *   - release: RELEASE_LOCK, its answer checked: anything but 1 (or a failed statement)
 *     tells the holder its lock was lost (MysqlBackend.release).
 *
 * Bounds (defaults; -D overrides): NC0 = 2 callers in process 0, 1 in process 1;
 * sessions 2 + 1, and one replacement per process; BLK = 3 tokens per draw; KILLS = 1
 * session killed; RESTARTS = 1 server restart (every session ends; the counter row
 * stays); GIVEUPS = 1 wait ended by KILL QUERY; the server's own GET_LOCK timeout at
 * any time (models/model-check.json checks KILL with giving up, and a restart, as two
 * configurations: together they exceed the run's budget; the broken variants run with
 * both). NO_FAULTS: none of these; then every caller must be served (P5). Stalls are
 * in the model (every interleaving is explored); a named lock has no lease to run out.
 *
 * Properties (asserted; the names are docs/protocol.md's):
 *   P1 mutual exclusion among holders not yet told they lost the lock
 *   P2 fencing tokens strictly increase in grant order (grants made while their session
 *      holds K on the server; a holder whose session ended has lost the lock and is told)
 *   P5 no deadlock (every caller ends; no invalid end state), at the end K is free and
 *      nobody waits for it, and without faults every caller is served
 *   P6 a holder that lost its lock (its session ended, or the server no longer shows it
 *      as the owner) is told by the time it finishes
 *   INV every named lock the server shows for a live session is claimed by that
 *      session's process, in every state
 *
 * Broken variants (each the model with one guard removed; SPIN must refute each):
 *   BROKEN_DEAD_CHECK     a reply read on a session known to have ended grants (MysqlSession.run, hold)
 *   BROKEN_LAST_VALUE     a block's token is used without comparing the counter read
 *                         after the grant with the block's end (MysqlSession.grantToken)
 *   BROKEN_LEARN_TELLS    a session's end does not tell the holders on it (MysqlSession.kill)
 *   BROKEN_KILL_DISCARD   a wait ended by KILL QUERY returns its session to the pool
 *                         instead of ending it (MysqlLockAttempt.windDown)
 *   BROKEN_RELEASE_CHECK  RELEASE_LOCK's failure is not told to the holder (MysqlBackend.release)
 */

#ifndef NC0
#define NC0 2
#endif
#define NC (NC0 + 1)          /* callers: 0 .. NC0-1 in process 0, NC0 in process 1 */
#define NS 5                  /* sessions: 0, 1 (and 3 replacing one) of process 0; 2 (and 4) of process 1 */
#define NONE 255
#ifndef BLK
#define BLK 3
#endif
#ifdef NO_FAULTS
#define KILLS 0
#define RESTARTS 0
#define GIVEUPS 0
#endif
#ifndef KILLS
#define KILLS 1
#endif
#ifndef RESTARTS
#define RESTARTS 1
#endif
#ifndef GIVEUPS
#define GIVEUPS 1
#endif

#define PROC(c) (c < NC0 -> 0 : 1)
#define OPEN(s) (alive[s] && !knownDead[s])

/* ------------------------------------------------------------------ the server */
byte owner = NONE;            /* the session holding K's named lock */
byte cnt = 0;                 /* its count (GET_LOCK stacks per session) */
byte wq[NS];                  /* sessions blocked in GET_LOCK(K, s) */
byte wqLen = 0;
byte ctr = 0;                 /* the fencing counter row: the last token drawn (survives a restart) */
bool alive[NS];               /* the server's session exists */
byte readAt[NS];              /* the counter as read right after the session's last grant */
byte kills = 0;
byte restarts = 0;

/* --------------------------------------------------------------- the processes */
bool opened[NS];              /* the pool opened the session (3 and 4: replacements) */
bool knownDead[NS];           /* the process learned that the session ended */
bool exclusive[NS];           /* a blocking wait has the session to itself */
byte blockEnd[NS];            /* the session's block: its last token (0: none) */
byte nxt[NS];                 /* the block's next token */
byte claims[NS];              /* locks of K the session's statements may have taken */
bool turn[2];                 /* a caller of the process owns K in the process */
byte lq[2 * NC];              /* each process's local FIFO of callers waiting for their turn */
byte lqLen[2];
byte lastToken = 0;
byte giveups = 0;
byte finished = 0;

mtype = { ARRIVING, QUEUED_LOCAL, ASKING, WAITING, HOLDING, RELEASED, GAVE_UP };
mtype ph[NC];
byte sess[NC];
byte token[NC];
bool told[NC];
bool isTurn[NC];

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

/* K comes free: a session of the server's queue gets it, and reads the counter right after */
inline grantNext() {
  if
  :: wqLen > 0 -> owner = wq[0]; cnt = 1; readAt[owner] = ctr; dropFromQueue(owner)
  :: else -> owner = NONE; cnt = 0
  fi
}

/* the server ends a session: its named locks go with it, it leaves the queue */
inline endSession(s) {
  alive[s] = false;
  if
  :: owner == s -> grantNext()
  :: else -> dropFromQueue(s)
  fi
}

/* the process learns that session s ended (MysqlSession.kill): the holders on it are told */
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
  told[c] = knownDead[s];       /* MysqlSession.hold: a session known dead tells at once */
#endif
  if
  :: alive[s] && owner == s ->
     assert(t > lastToken);     /* P2: its session holds K on the server */
     lastToken = t
  :: else -> skip
  fi;
  checkP1()
}

/* the turn passes to the next local caller, or K is free in the process */
inline passTurn(c) {
  isTurn[c] = false;
  if
  :: lqLen[PROC(c)] > 0 ->
     isTurn[lq[PROC(c) * NC]] = true;
     i_ = 0;
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

/* a session of process p usable now: opened, not known to have ended, not a wait's own */
#define USABLE(s) (opened[s] && !knownDead[s] && !exclusive[s])

inline pickShared(p, s) {
  if
  :: p == 0 && USABLE(0) -> s = 0
  :: p == 0 && USABLE(1) -> s = 1
  :: p == 0 && USABLE(3) -> s = 3
  :: p == 1 && USABLE(2) -> s = 2
  :: p == 1 && USABLE(4) -> s = 4
  :: else -> s = NONE
  fi
}

/* a session a blocking wait may have to itself (one not holding K) */
inline pickOwn(p, s) {
  if
  :: p == 0 && USABLE(0) && owner != 0 -> s = 0
  :: p == 0 && USABLE(1) && owner != 1 -> s = 1
  :: p == 0 && USABLE(3) && owner != 3 -> s = 3
  :: p == 1 && USABLE(2) && owner != 2 -> s = 2
  :: p == 1 && USABLE(4) && owner != 4 -> s = 4
  :: else -> s = NONE
  fi
}

proctype caller(byte c) {
  byte s = NONE;
  byte t = 0;
  byte read = 0;                /* the counter as read after the grant */
  bool granted = false;
  bool failed = false;          /* the statement found its session gone */
  bool retried = false;

  /* wait: take K in the process, or queue behind the caller whose turn it is */
  atomic {
    if
    :: !turn[PROC(c)] -> turn[PROC(c)] = true; isTurn[c] = true; ph[c] = ASKING
    :: else -> lq[PROC(c) * NC + lqLen[PROC(c)]] = c; lqLen[PROC(c)]++; ph[c] = QUEUED_LOCAL
    fi
  }
  atomic { isTurn[c] -> ph[c] = ASKING }

tryLock:
  /* GET_LOCK(name, 0) and the counter's read, on the server */
  atomic {
    pickShared(PROC(c), s);
    if
    :: s == NONE -> goto giveUp           /* no session: LockBackendError (fail closed) */
    :: else -> skip
    fi;
    claims[s]++;
    failed = !alive[s];
    if
    :: alive[s] && owner == NONE -> owner = s; cnt = 1; read = ctr; granted = true
    :: alive[s] && owner == s -> cnt++; read = ctr; granted = true
    :: else -> granted = false
    fi
  }
  /* tried: the reply, handled later */
  atomic {
    if
    :: failed && !knownDead[s] -> learnDeath(s)   /* the statement failed: the session ended */
    :: else -> skip
    fi;
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
    :: granted -> goto grantToken
    :: else -> claims[s]--
    fi
  }

  /* waitLock: GET_LOCK(name, s) on a session of its own */
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
    :: alive[s] && owner == NONE -> owner = s; cnt = 1; readAt[s] = ctr
    :: alive[s] && owner != NONE -> wq[wqLen] = s; wqLen++
    :: else -> skip                       /* gone: the statement fails */
    fi
  }
  /* waited: granted, the server's seconds ran out, killed (the caller gave up), or the session ended */
  if
  :: atomic {
       owner == s && OPEN(s) ->           /* 1: granted; the session is shared again */
       exclusive[s] = false;
       read = readAt[s];
       goto grantToken
     }
#ifndef NO_FAULTS
  :: atomic {
       owner != s && OPEN(s) ->           /* 0: the server's timeout; nothing held */
       dropFromQueue(s);
       claims[s]--;
       exclusive[s] = false;
       goto giveUp
     }
#endif
  :: atomic {
       giveups < GIVEUPS && OPEN(s) ->    /* KILL QUERY: NULL, or 1 if granted in that instant */
       giveups++;
#ifndef BROKEN_KILL_DISCARD
       endSession(s);                     /* windDown ends the session: whatever it took goes with it */
       learnDeath(s);
#else
       if
       :: owner != s -> dropFromQueue(s)  /* killed in the queue */
       :: else -> skip                    /* granted in that instant: the session keeps it */
       fi;
       claims[s]--;
       exclusive[s] = false;
#endif
       goto giveUp
     }
  :: atomic { !alive[s] && !knownDead[s] -> learnDeath(s); goto giveUp }   /* the statement failed */
  :: atomic { knownDead[s] -> goto giveUp }   /* the session ended while it waited: LockBackendError */
  fi;

grantToken:
  /* the block's next token while nobody drew since the block, else a draw */
  atomic {
    if
#ifndef BROKEN_LAST_VALUE
    :: blockEnd[s] != 0 && nxt[s] <= blockEnd[s] && read == blockEnd[s] ->
#else
    :: blockEnd[s] != 0 && nxt[s] <= blockEnd[s] ->
#endif
       t = nxt[s]; nxt[s]++;
       hold(c, s, t);
       goto holding
    :: else -> skip
    fi;
    /* the draw (UPDATE … LAST_INSERT_ID(last_token + block)) on the server */
    if
    :: alive[s] -> ctr = ctr + BLK; t = ctr - BLK + 1; failed = false
    :: else -> failed = true
    fi
  }
  atomic {
    if
    :: failed && !knownDead[s] -> learnDeath(s)
    :: else -> skip
    fi;
    if
    :: knownDead[s] -> claims[s] = 0; goto giveUp   /* windDown: the session is discarded */
    :: else -> blockEnd[s] = t + BLK - 1; nxt[s] = t + 1; hold(c, s, t)
    fi
  }

holding:
  /* release: letGo (the session no longer tells this holder), then RELEASE_LOCK, its answer checked */
  atomic {
    ph[c] = RELEASED;
    granted = alive[s] && owner == s;     /* the lock was still its own until now */
    if
    :: granted ->
       if
       :: cnt > 1 -> cnt--
       :: else -> grantNext()
       fi
    :: alive[s] && !granted ->            /* 0 or NULL: not its own; the session is discarded */
#ifndef BROKEN_RELEASE_CHECK
       told[c] = true;
#endif
       endSession(s);
       learnDeath(s)
    :: !alive[s] && !knownDead[s] ->      /* the statement fails: a loss found at release */
#ifndef BROKEN_RELEASE_CHECK
       told[c] = true;
#endif
       learnDeath(s)
    :: knownDead[s] -> skip               /* nothing to send (told when it was learned) */
    fi;
    assert(granted || told[c]);           /* P6 */
    if :: claims[s] > 0 -> claims[s]-- :: else -> skip fi;
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

/* KILL of one session (at most KILLS), and server restarts (at most RESTARTS): every session ends */
proctype faults() {
  do
  :: atomic { kills < KILLS && alive[0] -> kills++; endSession(0) }
  :: atomic { kills < KILLS && alive[1] -> kills++; endSession(1) }
  :: atomic { kills < KILLS && alive[2] -> kills++; endSession(2) }
  :: atomic {
       restarts < RESTARTS ->
       restarts++;
       i_ = 0;
       do
       :: i_ < NS -> alive[i_] = false; i_++
       :: else -> break
       od;
       i_ = 0;
       owner = NONE; cnt = 0;
       do
       :: wqLen > 0 -> wqLen--; wq[wqLen] = 0
       :: else -> break
       od
     }
  :: kills >= KILLS && restarts >= RESTARTS -> break
  :: finished == NC -> break
  od
}

/* a process learns, some time after, that a session of its ended (the socket's end, a failed statement) */
proctype learner() {
end_learner:
  do
  :: atomic { opened[0] && !alive[0] && !knownDead[0] -> learnDeath(0) }
  :: atomic { opened[1] && !alive[1] && !knownDead[1] -> learnDeath(1) }
  :: atomic { opened[2] && !alive[2] && !knownDead[2] -> learnDeath(2) }
  :: atomic { opened[3] && !alive[3] && !knownDead[3] -> learnDeath(3) }
  :: atomic { opened[4] && !alive[4] && !knownDead[4] -> learnDeath(4) }
  /* the pool opens a replacement once a session of its process ended (the server is back) */
  :: atomic { !opened[3] && (knownDead[0] || knownDead[1]) -> opened[3] = true; alive[3] = true }
  :: atomic { !opened[4] && knownDead[2] -> opened[4] = true; alive[4] = true }
  od
}

/* INV, in every state: every named lock of a live session is claimed by it */
proctype audit() {
end_audit:
  do
  :: atomic { owner != NONE && alive[owner] && !knownDead[owner] && claims[owner] == 0 -> assert(false) }   /* INV */
  od
}

init {
  atomic {
    opened[0] = true; opened[1] = true; opened[2] = true;
    alive[0] = true; alive[1] = true; alive[2] = true;
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
    run faults();
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
