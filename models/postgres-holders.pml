/*
 * Several holders of one key on PostgreSQL (`concurrency` > 1, `shared`): the
 * statements of libs/serialized/src/providers/postgres/postgres-lock.statements.ts
 * (ShapeStatements) as ShapedLockAttempt (shaped-lock.attempt.ts) and LockSession
 * (lock.session.ts) run them, beside the plain exclusive lock, as a Promela model for
 * SPIN. docs/protocol.md ("Several holders of one key: the models") presents it;
 * models/postgres.pml is the plain protocol (local hand-offs, token blocks, the
 * timeout-grant race, the session audit).
 *
 * One key K. Three callers: 0 and 1 in process 0, 2 in process 1. Each process has a
 * pool session its callers' tries run on (sessions 3 and 4: advisory locks stack on a
 * session, so a try there may find K held by another caller of its process); a caller
 * that waits takes a session of its own (session c). A caller's shape (its limit): N
 * (a group of up to N, `concurrency: N`), 0 (`shared`, a reader) or PLAIN (exclusive,
 * a writer); callers of one key may pass different limits (MIX=4, 6). The local line of
 * a process (LockLines) lets a plain caller ask only while no other caller of its
 * process holds or asks, a reader only while no writer or group member of its process
 * does, and a group member only while no writer or reader does (the code lets one
 * shaped caller of a key ask at a time, and keeps its process's holders under the
 * smallest limit among them: with two callers a process and limits of 2 and more the
 * count never binds, and the model lets both ask, a superset of its interleavings).
 * Each caller asks once; holds, writes and releases, or gives up.
 *
 * The server is atomic steps on the advisory locks of K (shared counts and the
 * exclusive holder per session, and its wait queue: PostgreSQL grants a request at once
 * only when it conflicts neither with another session's hold nor with a mode already
 * waited for, and on a release wakes waiters in queue order, each one that conflicts
 * neither with the holders nor with a waiter ahead of it — so readers queue behind a
 * queued writer), of the gate G (exclusive; its wait queue), of the slots (exclusive,
 * tried only: a group of limit L tries the first L), of the shape markers (held shared,
 * one key per shape of K: 0 for readers, L for groups of L; nobody takes one exclusive,
 * so taking one never waits), the wait mark (held shared by every wait statement while
 * it runs: nobodyWaits tries it exclusive) and the fencing sequence. A wait statement's grant and
 * the rest of the statement (the token, the gate's holder asking for K) are later steps
 * of the session; anything may happen in between, including the session's end
 * (ENDS: pg_terminate_backend, or its process's crash: the server frees its locks at
 * once; the process learns it later and tells the holders on it). A stall is a
 * process whose steps come late: every interleaving is explored. A try statement is
 * one step: the statements that read the markers never run side by side (a try holds
 * the wait mark exclusive and the gate shared for its statement, the gate's holder the
 * gate exclusive), and each reads only after taking its own marker, so of two that
 * overlapped at least one would see the other.
 *
 * Every shaped holder also holds its shape's marker, and every statement that takes one
 * checks the shapes in the same statement (otherShapeInside): it fails when another
 * session holds a marker of another shape of K, and then gives back what it took.
 * PostgreSQL lets every holder of K shared in together, readers and groups of any limit:
 * the markers keep the shapes of different sessions apart (the session's own markers
 * never count, as its own locks never conflict: in a process the local line keeps
 * shapes apart). Group waiters (ShapedLockAttempt): tryGroup on the pool session (the
 * gate shared for the statement, nobodyWaits, K shared, the first free slot not held by
 * the session already, then the marker and the check; else what it took goes back);
 * else lockGate on their own session (the gate exclusive, then K shared), then trySlot
 * (a free slot, the marker and the check: a token, the gate let go; else the slot and
 * the marker go back) on each NOTIFY of a group's release and every second — a step
 * enabled at any time (a crashed holder's session sends no NOTIFY, a reader's release
 * sends one only when a waiter holds the gate; the timer looks again); a waiter gives
 * up at the gate (leaveGate) or in a wait (its session ends). Readers: tryShared (the
 * gate shared, nobodyWaits, K shared, the marker and the check), else lockGate as a
 * group (K shared queues behind a queued writer, so readers still queue behind
 * writers), then tryReader at the gate (the marker and the check: a token, the gate let
 * go; else the marker goes back) on each NOTIFY and every second. A release lets go K
 * shared and the marker (and a group its slot, with a NOTIFY). Writers hold no marker: tryLock (the gate shared, then K), else
 * lock.
 *
 * Properties (asserted; the names are docs/protocol.md's). A holder is untold while it
 * was not told and its session lives (PostgreSQL has no lease: as models/postgres.pml's
 * P1, a holder whose session ended unbeknownst to it is fenced off by P2 until its
 * process learns):
 *   P2  each grant draws its own fencing token, greater than every token drawn before
 *   P8  arrival order: a try takes K only when no session waits (in a wait statement,
 *       at the gate or in the server's queues), and never past the gate's holder; the
 *       server grants in its queues' order (PostgreSQL's) and the gate's holder takes
 *       the first slot that comes free. A writer's tryLock tries the gate shared for its
 *       statement too: looking at K alone, it passed a group waiter in the instant
 *       between the gate's grant and its request for K, inside lockGate's one statement
 *       (found by this model; BROKEN_WRITER_PASSES_GATE); so does a reader's tryShared:
 *       the gate's holder holds K shared and marks no wait while it looks for a slot
 *       or waits for another shape to leave (BROKEN_READER_GATE)
 *   P5  every caller ends (waiting is no end state here): holds and releases, or gives up
 *   P9  never more than N untold holders (at each grant and write, the untold holders
 *       number at most the limit of every untold group holder)
 *   P10 no writer beside an untold holder
 *   P11 no two untold holders of different shapes on different sessions: readers and
 *       group members never inside together across sessions, nor groups of different
 *       limits
 *
 * Broken variants (each the model with one guard removed; SPIN must refute each):
 *   BROKEN_SLOTS          the slots' series runs to the limit inclusive: L + 1 slots
 *   BROKEN_READER_PASSES  tryShared without nobodyWaits: K shared stacks on a pool session
 *                         that holds it already, past a writer queued in the server
 *                         (MIX=5: two readers of one process)
 *   BROKEN_TOKEN_REUSE    trySlot takes the sequence's last value instead of nextval
 *   BROKEN_GATE_PASS      tryGroup without the gate's shared try: a newcomer takes a slot
 *                         freed while the gate's holder waits for its NOTIFY
 *   BROKEN_WRITER_PASSES_GATE  tryLock without the gate's shared try: a writer takes K in
 *                         the instant a group waiter holds the gate and has not asked for K
 *   BROKEN_SHAPE_CHECK    markers taken but never checked: a reader beside groups of
 *                         another process (MIX=3), groups of limits 2 and 3 of different
 *                         processes together (MIX=4)
 *   BROKEN_READER_GATE    tryShared without the gate's shared try: a reader takes K past
 *                         the gate's holder, a group waiter that has not taken its slot (MIX=3)
 *
 * Bounds (defaults; -D overrides): N = 2; MIX = 0 (three groups of N), 1 (reader,
 * writer | reader), 2 (group, writer | group), 3 (group, group | reader: readers beside
 * groups of another process, which PostgreSQL alone lets in together), 4 (limits 2, 2 |
 * 3), 5 (reader, reader | writer: readers stacking on their pool session), 6 (limits 2,
 * 3 | 2: two limits in one process); ENDS = 1 session ended; GIVEUPS = 1 waiter giving
 * up.
 */

#ifndef N
#define N 2
#endif
#ifndef MIX
#define MIX 0
#endif
#ifdef NO_FAULTS
#define ENDS 0
#define GIVEUPS 0
#endif
#ifndef ENDS
#define ENDS 1
#endif
#ifndef GIVEUPS
#define GIVEUPS 1
#endif
/* the largest limit of the configuration: the slots' array holds one more (BROKEN_SLOTS) */
#if MIX == 4 || MIX == 6
#define MAXLIM 3
#else
#define MAXLIM N
#endif
#define NSH (MAXLIM + 1)      /* shapes: 0 (a reader), L (a group of L); the slots' array's length */

#define NC 3
#define NS 5                  /* sessions: c (a caller's own), 3 and 4 (the pools of processes 0 and 1) */
#define NONE 255
#define PLAIN 255
#define PROC(c) (c < 2 -> 0 : 1)
#define POOL(c) (c < 2 -> 3 : 4)
#define SHR 1
#define EXC 2
/* the slots a group of caller c tries: the first lim[c] */
#ifndef BROKEN_SLOTS
#define NSLOT(c) (lim[c])
#else
#define NSLOT(c) (lim[c] + 1)
#endif

/* ------------------------------------------------------------------ the server */
bool alive[NS];
byte kS[NS];                  /* K held shared: the session's count (locks stack) */
bool kX[NS];                  /* K held exclusive */
byte kq[NS];                  /* sessions waiting for K, in order */
byte kqm[NS];                 /* ... the mode each waits for */
byte kqLen = 0;
bool gX[NS];                  /* the gate held (exclusive) */
byte gq[NS];                  /* sessions waiting for the gate, in order */
byte gqLen = 0;
byte sl[NSH];                 /* each slot's holder session */
byte mk[NS * NSH];            /* the shape markers held shared: session s's count of shape h at s * NSH + h (locks stack) */
bool inWait[NS];              /* a wait statement runs on the session: it holds the wait mark shared */
bool pend[NS];                /* its wait was granted: the rest of the statement is to run */
byte seq = 0;                 /* the fencing sequence's last value */
byte lastTok = 0;             /* ghost (P2) */
byte ends = 0;
byte giveups = 0;

/* -------------------------------------------------------------- the processes */
mtype = { ARRIVING, ASKING, WAITING, AT_GATE, HOLDING, DONE, GAVE_UP };
mtype ph[NC];
byte lim[NC];
byte sess[NC];                /* the session it holds on */
byte slot[NC];
bool told[NC];
bool knownDead[NS];

/* temporaries (reset after use) */
byte i_, j_, n_, m_, t_;
bool ok_, rd_;

#define UNTOLD(x) (ph[x] == HOLDING && !told[x] && alive[sess[x]])
/* two untold shaped holders of different shapes on different sessions (P11) */
#define MIXED(a, b) (UNTOLD(a) && UNTOLD(b) && lim[a] != PLAIN && lim[b] != PLAIN && lim[a] != lim[b] && sess[a] != sess[b])

inline checkHolders() {
  i_ = 0; n_ = 0; rd_ = false;
  do
  :: i_ < NC -> if :: UNTOLD(i_) -> n_++ :: else -> skip fi; i_++
  :: else -> break
  od;
  i_ = 0;
  do
  :: i_ < NC ->
     if
     :: UNTOLD(i_) && lim[i_] != 0 && lim[i_] != PLAIN -> assert(n_ <= lim[i_])   /* P9: at most the smallest limit of the untold groups */
     :: UNTOLD(i_) && lim[i_] == PLAIN -> assert(n_ == 1)                          /* P10: an untold writer is alone */
     :: else -> skip
     fi;
     i_++
  :: else -> break
  od;
  assert(!MIXED(0, 1) && !MIXED(0, 2) && !MIXED(1, 2));   /* P11: no two shapes inside on different sessions */
  i_ = 0; n_ = 0
}

/* nextval */
inline draw(t) {
  seq++;
  assert(seq < 250);            /* BOUND */
  t = seq;
  assert(t > lastTok);          /* P2: a token of its own, greater than every one drawn before */
  lastTok = t
}

/* whether a request of session s for K in `mode` conflicts with another session's hold */
inline heldConflict(s, mode, r) {
  r = false; j_ = 0;
  do
  :: j_ < NS ->
     if
     :: j_ != s && (kX[j_] || (mode == EXC && kS[j_] > 0)) -> r = true
     :: else -> skip
     fi;
     j_++
  :: else -> break
  od;
  j_ = 0
}

/* PostgreSQL's grant at once: the session holds K in that mode already (the lock stacks), or
   the request conflicts with no other session's hold and with no mode waited for */
inline grantableNow(s, mode, r) {
  if
  :: mode == SHR && kS[s] > 0 -> r = true
  :: mode == EXC && kX[s] -> r = true
  :: else ->
     heldConflict(s, mode, r);
     if
     :: !r ->
        j_ = 0;
        do
        :: j_ < kqLen -> if :: mode == EXC || kqm[j_] == EXC -> r = true :: else -> skip fi; j_++
        :: else -> break
        od;
        j_ = 0;
        r = !r
     :: else -> r = false
     fi
  fi
}

inline takeK(s, mode) {
  if
  :: mode == SHR -> kS[s]++
  :: else -> kX[s] = true
  fi
}

/* ProcLockWakeup: waiters in order, each granted unless it conflicts with a hold or a waiter ahead */
inline wakeK() {
  m_ = 0;                       /* the modes waited for ahead */
  i_ = 0;
  do
  :: i_ < kqLen ->
     heldConflict(kq[i_], kqm[i_], ok_);
     if
     :: !ok_ && !(kqm[i_] == EXC && m_ != 0) && !(kqm[i_] == SHR && (m_ & EXC) != 0) ->
        takeK(kq[i_], kqm[i_]); pend[kq[i_]] = true;
        j_ = i_;
        do
        :: j_ + 1 < kqLen -> kq[j_] = kq[j_ + 1]; kqm[j_] = kqm[j_ + 1]; j_++
        :: else -> break
        od;
        kqLen--; kq[kqLen] = 0; kqm[kqLen] = 0; j_ = 0
     :: else -> m_ = m_ | kqm[i_]; i_++
     fi
  :: else -> break
  od;
  i_ = 0; m_ = 0; ok_ = false
}

inline gateFree(r) {
  r = !(gX[0] || gX[1] || gX[2] || gX[3] || gX[4])
}

inline wakeG() {
  gateFree(ok_);
  if
  :: ok_ && gqLen > 0 ->
     gX[gq[0]] = true; pend[gq[0]] = true;
     j_ = 0;
     do
     :: j_ + 1 < gqLen -> gq[j_] = gq[j_ + 1]; j_++
     :: else -> break
     od;
     gqLen--; gq[gqLen] = 0; j_ = 0
  :: else -> skip
  fi;
  ok_ = false
}

/* a request that may wait: granted at once, or queued */
inline requestK(s, mode) {
  grantableNow(s, mode, ok_);
  if
  :: ok_ -> takeK(s, mode); pend[s] = true
  :: else -> kq[kqLen] = s; kqm[kqLen] = mode; kqLen++
  fi;
  ok_ = false
}

inline requestG(s) {
  gateFree(ok_);
  if
  :: ok_ && gqLen == 0 -> gX[s] = true; pend[s] = true
  :: else -> gq[gqLen] = s; gqLen++
  fi;
  ok_ = false
}

inline unlockShared(s) {
  if :: kS[s] > 0 -> kS[s]-- :: else -> skip fi;
  wakeK()
}

inline unlockGate(s) {
  gX[s] = false;
  wakeG()
}

/* a shape marker, taken shared (it never waits: nobody takes one exclusive) and let go */
inline takeMarker(s, h) {
  mk[s * NSH + h]++
}
inline dropMarker(s, h) {
  if :: mk[s * NSH + h] > 0 -> mk[s * NSH + h]-- :: else -> skip fi
}

/* otherShapeInside, in the statement that took session s's marker of shape h: another
   session holds a marker of another shape (the session's own markers never count, as its
   own locks never conflict: in a process the local line keeps shapes apart) */
inline otherShapeInside(s, h, r) {
  r = false;
#ifndef BROKEN_SHAPE_CHECK
  j_ = 0;
  do
  :: j_ < NS * NSH ->
     if :: j_ / NSH != s && j_ % NSH != h && mk[j_] > 0 -> r = true :: else -> skip fi;
     j_++
  :: else -> break
  od;
  j_ = 0
#endif
}

/* nobodyWaits: the wait mark's exclusive try (no other session runs a wait statement) */
inline nobodyWaits(s, r) {
  r = true; j_ = 0;
  do
  :: j_ < NS -> if :: j_ != s && inWait[j_] -> r = false :: else -> skip fi; j_++
  :: else -> break
  od;
  j_ = 0
}

/* P8 at a try's grant: nobody waits for K, at the gate or in a wait statement — also a
   waiter granted the gate whose lockGate statement has not yet asked for K (pend: the
   rest of its statement), which a writer's tryLock passed while it looked at K alone
   (BROKEN_WRITER_PASSES_GATE), and a waiter at the gate that the other shape inside keeps
   out, which a reader's try passed while it looked at the wait mark alone
   (BROKEN_READER_GATE) */
inline assertNobodyWaits(s) {
  j_ = 0;
  do
  :: j_ < NS ->
     assert(!(j_ != s && (inWait[j_] || gX[j_])));   /* P8: a try passes no waiter (nor the gate's holder) */
     j_++
  :: else -> break
  od;
  assert(kqLen == 0 && gqLen == 0);      /* P8: a try passes no waiter */
  j_ = 0
}

/* the first free slot of caller c's limit (NONE: none); a slot the session holds already is
   not free to it (tryGroup's and trySlot's `held`: a lock the session holds would stack) */
inline freeSlot(s, c, r) {
  r = NONE; j_ = 0;
  do
  :: j_ < NSLOT(c) && sl[j_] == NONE -> r = j_; break
  :: j_ < NSLOT(c) && sl[j_] != NONE -> j_++
  :: j_ >= NSLOT(c) -> break
  od;
  j_ = 0
}

/* the server ends a session: its locks go (the markers too), it leaves the queues */
inline endSession(s) {
  alive[s] = false; inWait[s] = false; pend[s] = false;
  kS[s] = 0; kX[s] = false; gX[s] = false;
  j_ = 0;
  do
  :: j_ < NSH -> if :: sl[j_] == s -> sl[j_] = NONE :: else -> skip fi; mk[s * NSH + j_] = 0; j_++
  :: else -> break
  od;
  /* out of the queues */
  j_ = 0; n_ = 0;
  do
  :: j_ < kqLen -> if :: kq[j_] != s -> kq[n_] = kq[j_]; kqm[n_] = kqm[j_]; n_++ :: else -> skip fi; j_++
  :: else -> break
  od;
  j_ = n_;
  do :: j_ < kqLen -> kq[j_] = 0; kqm[j_] = 0; j_++ :: else -> break od;
  kqLen = n_;
  j_ = 0; n_ = 0;
  do
  :: j_ < gqLen -> if :: gq[j_] != s -> gq[n_] = gq[j_]; n_++ :: else -> skip fi; j_++
  :: else -> break
  od;
  j_ = n_;
  do :: j_ < gqLen -> gq[j_] = 0; j_++ :: else -> break od;
  gqLen = n_;
  j_ = 0; n_ = 0;
  wakeG();
  wakeK()
}

/* the local line of c's process admits it to ask the server: a plain caller while no other
   caller of its process holds or asks, a reader while no writer or group member of its
   process does, a group member while no writer or reader does (LockLine.admits) */
#define BUSY(x) (ph[x] != ARRIVING && ph[x] != DONE && ph[x] != GAVE_UP)
#define APART(a, b) (lim[a] == PLAIN || lim[b] == PLAIN || ((lim[a] == 0) != (lim[b] == 0)))
#define LINE_ADMITS(c) (c == 2 || !(BUSY(1 - c) && APART(c, 1 - c)))

inline hold(c, s) {
  ph[c] = HOLDING; sess[c] = s;
  told[c] = knownDead[s];       /* LockSession.hold: a session known to have ended tells at once */
  checkHolders()
}

proctype caller(byte c) {
  byte s = POOL(c);
  byte o = c;
  byte t = 0;
  byte k = NONE;
  bool r = false;

  /* the try, on the pool session, once the local line admits it (a pool whose session
     ended opens another: here the caller goes on to wait) */
  if
  :: atomic { LINE_ADMITS(c) && !(alive[s] && !knownDead[s]) -> ph[c] = ASKING }
  :: atomic {
    LINE_ADMITS(c) && alive[s] && !knownDead[s] ->
    ph[c] = ASKING;
    if
    :: lim[c] == PLAIN ->                               /* tryLock */
#ifndef BROKEN_WRITER_PASSES_GATE
       gateFree(r); r = r && gqLen == 0;                /* the gate's shared try, for the statement */
#else
       r = true;
#endif
       if
       :: r ->
          heldConflict(s, EXC, r);
          if
          :: !r && kqLen == 0 -> takeK(s, EXC); assertNobodyWaits(s); draw(t); hold(c, s)
          :: else -> skip
          fi
       :: else -> skip
       fi
    :: lim[c] == 0 ->                                   /* tryShared */
#ifndef BROKEN_READER_GATE
       gateFree(r); r = r && gqLen == 0;                /* the gate's shared try, for the statement */
#else
       r = true;
#endif
#ifndef BROKEN_READER_PASSES
       if :: r -> nobodyWaits(s, r) :: else -> skip fi;
#endif
       if :: r -> grantableNow(s, SHR, r) :: else -> skip fi;
       if
       :: r ->
          takeK(s, SHR); takeMarker(s, 0);
          otherShapeInside(s, 0, r);
          if
          :: !r -> assertNobodyWaits(s); draw(t); hold(c, s)
          :: else -> dropMarker(s, 0); unlockShared(s)    /* no: what the statement took goes back */
          fi
       :: else -> skip
       fi
    :: lim[c] != 0 && lim[c] != PLAIN ->                /* tryGroup */
#ifndef BROKEN_GATE_PASS
       gateFree(r); r = r && gqLen == 0;
#else
       r = true;
#endif
       if :: r -> nobodyWaits(s, r) :: else -> skip fi;
       if :: r -> grantableNow(s, SHR, r) :: else -> skip fi;
       if
       :: r ->
          takeK(s, SHR);
          freeSlot(s, c, k);
          if
          :: k != NONE ->
             sl[k] = s; takeMarker(s, lim[c]);
             otherShapeInside(s, lim[c], r);
             if
             :: !r -> slot[c] = k; assertNobodyWaits(s); draw(t); hold(c, s)
             :: else -> sl[k] = NONE; dropMarker(s, lim[c]); unlockShared(s)
             fi
          :: else -> unlockShared(s)
          fi;
          k = NONE
       :: else -> skip
       fi
    fi;
    r = false
  }
  fi;
  if
  :: ph[c] == ASKING ->
     /* the wait, on a session of its own (one that ended is no session to wait on) */
     atomic {
       if
       :: alive[o] ->
          ph[c] = WAITING; inWait[o] = true;
          if
          :: lim[c] == PLAIN -> requestK(o, EXC)        /* lock */
          :: else -> requestG(o)                        /* lockGate: the gate first (a reader's too) */
          fi
       :: else -> ph[c] = GAVE_UP
       fi
     };
     if
     :: ph[c] == WAITING && lim[c] != PLAIN ->
        if
        :: atomic { pend[o] -> pend[o] = false; requestK(o, SHR) }   /* lockGate: then K shared */
        :: atomic { giveups < GIVEUPS && alive[o] -> giveups++; endSession(o); ph[c] = GAVE_UP }
        :: atomic { !alive[o] -> ph[c] = GAVE_UP }
        fi
     :: else -> skip
     fi;
     if
     :: ph[c] == WAITING ->
        if
        :: atomic { pend[o] -> pend[o] = false; inWait[o] = false;
             if
             :: lim[c] == PLAIN -> draw(t); hold(c, o)
             :: else -> ph[c] = AT_GATE
             fi }
        :: atomic { giveups < GIVEUPS && alive[o] -> giveups++; endSession(o); ph[c] = GAVE_UP }
        :: atomic { !alive[o] -> ph[c] = GAVE_UP }
        fi
     :: else -> skip
     fi;
     /* at the gate: trySlot (a group) or tryReader (a reader) on each NOTIFY and every
        second — a step enabled at any time; one that fails gives back what it took (the
        slot, the marker) and leaves the state as it was */
     do
     :: atomic { ph[c] == AT_GATE && lim[c] != 0 && alive[o] ->   /* trySlot */
          freeSlot(o, c, k);
          if
          :: k != NONE ->
             sl[k] = o; takeMarker(o, lim[c]);
             otherShapeInside(o, lim[c], r);
             if
             :: !r ->
                slot[c] = k;
#ifndef BROKEN_TOKEN_REUSE
                draw(t);
#else
                t = seq; assert(t > lastTok); lastTok = t;   /* P2 */
#endif
                unlockGate(o); hold(c, o)
             :: else -> sl[k] = NONE; dropMarker(o, lim[c])
             fi
          :: else -> skip
          fi;
          k = NONE; r = false }
     :: atomic { ph[c] == AT_GATE && lim[c] == 0 && alive[o] ->   /* tryReader */
          takeMarker(o, 0);
          otherShapeInside(o, 0, r);
          if
          :: !r -> draw(t); unlockGate(o); hold(c, o)
          :: else -> dropMarker(o, 0)
          fi;
          r = false }
     :: atomic { ph[c] == AT_GATE && giveups < GIVEUPS && alive[o] -> giveups++; unlockGate(o); unlockShared(o); ph[c] = GAVE_UP }   /* leaveGate */
     :: atomic { ph[c] == AT_GATE && !alive[o] -> ph[c] = GAVE_UP }
     :: ph[c] != AT_GATE -> break
     od
  :: else -> skip
  fi;
  if
  :: ph[c] == HOLDING ->
     /* the write: a holder told stops; else it writes */
     atomic { if :: !told[c] -> checkHolders() :: else -> skip fi };
     /* release */
     atomic {
       if
       :: alive[sess[c]] && !knownDead[sess[c]] ->
          if
          :: lim[c] == PLAIN -> kX[sess[c]] = false; wakeK()
          :: lim[c] == 0 -> dropMarker(sess[c], 0); unlockShared(sess[c])   /* unlockShared: K and the marker (its NOTIFY, when a waiter holds the gate: the gate holder's look, a step enabled at any time) */
          :: else -> sl[slot[c]] = NONE; dropMarker(sess[c], lim[c]); unlockShared(sess[c])   /* unlockGroup (its NOTIFY: the gate's holder's trySlot step) */
          fi
       :: else -> skip
       fi;
       ph[c] = DONE
     }
  :: else -> skip
  fi
}

/* faults: a session ends (pg_terminate_backend, or its process crashed); the process learns later */
proctype faults() {
end_faults:
  do
  :: atomic { ends < ENDS -> ends++;
       if
       :: alive[0] -> endSession(0)
       :: alive[1] -> endSession(1)
       :: alive[2] -> endSession(2)
       :: alive[3] -> endSession(3)
       :: alive[4] -> endSession(4)
       fi }
  :: atomic { (!alive[0] && !knownDead[0]) -> knownDead[0] = true;
       i_ = 0; do :: i_ < NC -> if :: ph[i_] == HOLDING && sess[i_] == 0 -> told[i_] = true :: else -> skip fi; i_++ :: else -> break od; i_ = 0 }
  :: atomic { (!alive[1] && !knownDead[1]) -> knownDead[1] = true;
       i_ = 0; do :: i_ < NC -> if :: ph[i_] == HOLDING && sess[i_] == 1 -> told[i_] = true :: else -> skip fi; i_++ :: else -> break od; i_ = 0 }
  :: atomic { (!alive[2] && !knownDead[2]) -> knownDead[2] = true;
       i_ = 0; do :: i_ < NC -> if :: ph[i_] == HOLDING && sess[i_] == 2 -> told[i_] = true :: else -> skip fi; i_++ :: else -> break od; i_ = 0 }
  :: atomic { (!alive[3] && !knownDead[3]) -> knownDead[3] = true;
       i_ = 0; do :: i_ < NC -> if :: ph[i_] == HOLDING && sess[i_] == 3 -> told[i_] = true :: else -> skip fi; i_++ :: else -> break od; i_ = 0 }
  :: atomic { (!alive[4] && !knownDead[4]) -> knownDead[4] = true;
       i_ = 0; do :: i_ < NC -> if :: ph[i_] == HOLDING && sess[i_] == 4 -> told[i_] = true :: else -> skip fi; i_++ :: else -> break od; i_ = 0 }
  od
}

init {
  atomic {
    i_ = 0;
    do :: i_ < NS -> alive[i_] = true; i_++ :: else -> break od;
    i_ = 0;
    do :: i_ < NSH -> sl[i_] = NONE; i_++ :: else -> break od;
    i_ = 0;
#if MIX == 0
    lim[0] = N; lim[1] = N; lim[2] = N;
#elif MIX == 1
    lim[0] = 0; lim[1] = PLAIN; lim[2] = 0;
#elif MIX == 2
    lim[0] = N; lim[1] = PLAIN; lim[2] = N;
#elif MIX == 3
    lim[0] = N; lim[1] = N; lim[2] = 0;
#elif MIX == 4
    lim[0] = 2; lim[1] = 2; lim[2] = 3;
#elif MIX == 5
    lim[0] = 0; lim[1] = 0; lim[2] = PLAIN;
#else
    lim[0] = 2; lim[1] = 3; lim[2] = 2;
#endif
    ph[0] = ARRIVING; ph[1] = ARRIVING; ph[2] = ARRIVING;
    run faults();
    run caller(0);
    run caller(1);
    run caller(2)
  };
  /* P5: every caller ends (else SPIN reports an invalid end state); then nothing is held or queued */
  (ph[0] == DONE || ph[0] == GAVE_UP) && (ph[1] == DONE || ph[1] == GAVE_UP) && (ph[2] == DONE || ph[2] == GAVE_UP);
  atomic {
    i_ = 0;
    do
    :: i_ < NS ->
       assert(kS[i_] == 0 && !kX[i_] && !gX[i_] && !inWait[i_]);   /* P5: nothing is held at the end */
       i_++
    :: else -> break
    od;
    assert(kqLen == 0 && gqLen == 0);   /* P5: nor queued */
    i_ = 0;
    do
    :: i_ < NS * NSH ->
       assert(mk[i_] == 0 && (i_ >= NSH || sl[i_] == NONE));   /* P5: no slot nor marker is held at the end */
       i_++
    :: else -> break
    od;
#ifdef NO_FAULTS
    assert(ph[0] == DONE && ph[1] == DONE && ph[2] == DONE);   /* P5: without faults every caller is served */
#endif
    i_ = 0
  }
}
