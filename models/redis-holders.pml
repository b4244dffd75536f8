/*
 * Several holders of one key on Redis (`concurrency` > 1, `shared`): the shaped scripts
 * of libs/serialized/src/providers/redis/protocol/lua/ (shaped.lua and shaped-*.lua)
 * beside the plain ones they share the key's queue with (acquire.lua, release.lua,
 * leave.lua, heartbeat.lua, extend.lua), as a Promela model for SPIN. docs/protocol.md
 * ("Several holders of one key: the models") presents it; models/VOCABULARY.md names
 * its states and transitions. models/redis.pml is the plain protocol alone (riders,
 * tenures, lost messages, restarts); this model leaves those out to reach the holders.
 *
 * One key K, NC = 3 callers, each in a process of its own (shaped callers never hand
 * on in-process: each asks Redis; a plain caller here takes blocks of one token and
 * has no riders). Each caller has a shape (its `limit`): N (a group of up to N,
 * `concurrency: N`), 0 (a reader, `shared`) or PLAIN (an exclusive caller: a writer).
 * It asks for K once; holds, writes once and releases, or gives up.
 *
 * Redis is atomic steps on its state: the plain lock string (owner, the server time its
 * PX ends), the shaped holders (:h, their lease ends; :s, their limits and tokens), the
 * queue (:q by arrival score, :hb their heart-beats) and the fencing counter. A script
 * runs in one step; its caller's send time is the step's clock (the latest it can be:
 * the worst case for the lease a reply grants). The clock ticks (to TMAX); a process's
 * steps may come at any time after (a stall is a process whose steps come late), and a
 * process may crash (CRASHES): it does nothing more, its places and leases lapse.
 *
 * What a process does (waiting/shaped.callers.ts, redis.backend.ts):
 *   - send: shaped-acquire.lua (or acquire.lua) in mode "wait": granted (the reply's
 *     lease counts from the send time) or queued (place);
 *   - queued: a grant message ("<member> <fence> <px> ...") from whichever script passed
 *     K on; its lease counts from the stall monitor's `respondedAt` (resp[], which ticks
 *     only while no message is unread); run at once when fresh ((now - since) * 3 <= px,
 *     commands.isFresh), else confirmed first (shaped-extend.lua / extend.lua: still
 *     ours and the answer fresh → granted from the question's send time; not ours →
 *     requeue; ours but late → the grant is given back (shaped-release.lua /
 *     leave.lua) and requeue); heart-beats (shaped-heartbeat.lua / heartbeat.lua) once
 *     per clock tick, whose reply may name the waiter missing (its place lapsed:
 *     requeue); `requeue` sends it again under a new token, to the tail (REQUEUES);
 *     a waiter may give up (GIVEUPS: shaped-release.lua / leave.lua);
 *   - granted: renewals (RENEWS: an owner-checked extend while the lease as last
 *     confirmed runs; its reply renews it from its send time, or tells the holder), a
 *     write (the lease-end guard: past its lease the holder is told), a release
 *     (shaped-release.lua / release.lua).
 * Messages are not lost here (models/redis.pml has lost and duplicated ones, and the
 * heart-beat's report of a missed grant); a confirmation that is late gives the grant
 * back at once (the code asks up to 3 times first).
 *
 * Properties (asserted; the names are docs/protocol.md's). A holder is untold while it
 * has not been told it lost K and its lease as last confirmed runs (now < lend): it
 * would read `lock.lost` as unset. A crashed holder still counts, until its lease ends.
 *   P2  every grant by Redis has its own fencing token, greater than every token before
 *   P8  arrival order at the server: a grant from the queue goes to the first live place
 *       (no live place that queued earlier is passed over); a newcomer is granted at
 *       once only when no live place is queued. Exceptions: places whose heart-beat
 *       lapsed (dropped by the grant). Shaped holders are never handed on in-process.
 *   P9  never more than N untold holders: at each grant, renewal and write, the untold
 *       holders number at most the limit of every untold group holder among them (no
 *       mix lets in more than the smallest limit), and readers are never beside a group
 *   P10 no writer beside an untold holder: an untold writer is the only untold holder
 *
 * Broken variants (each the model with one guard removed; SPIN must refute each):
 *   BROKEN_ADMITS         shaped.lua's admits lets a group in at count == limit (N + 1)
 *   BROKEN_READER_PASSES  shaped-acquire.lua grants a newcomer the free room without
 *                         looking at the queue: a reader goes in ahead of a queued writer
 *   BROKEN_TOKEN_REUSE    grant_shaped takes the counter's value without drawing a new one
 *
 * Bounds (defaults; -D overrides): N = 2; MIX = 0 (three groups of N), 1 (reader,
 * writer, reader), 2 (group, writer, group: with two shaped callers the same as 1);
 * TMAX = 3 ticks; lease L = 3 ticks; heart-beat timeout HB = 2, which is also the
 * hand-off lease cap CAP (a grant passed on by a script has min(lease, CAP), a grant in
 * acquire's reply the full lease); CRASHES = 1; GIVEUPS = 1; RENEWS = 1; REQUEUES = 1.
 */

#ifndef N
#define N 2
#endif
#ifndef MIX
#define MIX 0
#endif
#ifndef TMAX
#define TMAX 3
#endif
#ifndef L
#define L 3
#endif
#ifndef HB
#define HB 2
#endif
#ifndef CAP
#define CAP HB                /* the hand-off lease cap (the heart-beat timeout): a grant passed on has min(lease, CAP) */
#endif
#ifdef NO_FAULTS
#define CRASHES 0
#define GIVEUPS 0
#endif
#ifndef CRASHES
#define CRASHES 1
#endif
#ifndef GIVEUPS
#define GIVEUPS 1
#endif
#ifndef RENEWS
#define RENEWS 1
#endif
#ifndef REQUEUES
#define REQUEUES 1
#endif

#define NC 3
#define NONE 255
#define PLAIN 255             /* a plain caller's limit: shape_of answers nil for it */

/* ------------------------------------------------------------------ Redis */
byte now = 0;                 /* the server clock (and every process's: only differences matter) */
byte lockOwner = NONE;        /* the plain lock string: its owner token */
byte lockExp = 0;             /* ... exists while now < lockExp */
bool hld[NC];                 /* :h, shaped holders */
byte hexp[NC];                /* ... their lease ends (live while hexp >= now) */
bool inq[NC];                 /* :q, places */
byte qsc[NC];                 /* ... their arrival score, from the counter */
byte qb[NC];                  /* :hb, alive until */
byte ctr = 0;                 /* the fencing counter */
byte lastTok = 0;             /* ghost (P2): the last token Redis granted */

/* -------------------------------------------------------------- the processes */
mtype : waiter = { sending, queued, confirming, granted, gave_up };
mtype : waiter ph[NC];
byte lim[NC];                 /* the caller's shape: N, 0 (shared) or PLAIN */
bool crashed[NC];
byte resp[NC];                /* the stall monitor: the last tick the process was known responsive */
bool msg[NC];                 /* a grant message unread */
byte mtok[NC];                /* ... its fencing token */
byte hbAt[NC];                /* the tick of its last heart-beat */
byte tok[NC];                 /* its fencing token once granted */
byte lend[NC];                /* its lease as last confirmed */
bool told[NC];
bool released[NC];
byte crashes = 0;
byte giveups = 0;
byte renews = 0;
byte requeues = 0;

/* temporaries of the atomic steps (reset after use) */
byte i_, j_, n_, hd_, cnt_, sm_, f_;
bool rd_, hand_;

#define UNTOLD(x) (ph[x] == granted && !released[x] && !told[x] && now < lend[x])

/* P9, P10: who would read `lock.lost` as unset */
inline checkHolders() {
  i_ = 0; n_ = 0; rd_ = false; j_ = 0;
  do
  :: i_ < NC ->
     if
     :: UNTOLD(i_) -> n_++;
        if
        :: lim[i_] == 0 -> rd_ = true
        :: lim[i_] != 0 && lim[i_] != PLAIN -> j_ = 1
        :: else -> skip
        fi
     :: else -> skip
     fi;
     i_++
  :: else -> break
  od;
  assert(!(rd_ && j_ == 1));    /* P9: readers never beside a group */
  i_ = 0;
  do
  :: i_ < NC ->
     if
     :: UNTOLD(i_) && lim[i_] != 0 && lim[i_] != PLAIN -> assert(n_ <= lim[i_])   /* P9: at most N untold holders */
     :: UNTOLD(i_) && lim[i_] == PLAIN -> assert(n_ == 1)                          /* P10: an untold writer is alone */
     :: else -> skip
     fi;
     i_++
  :: else -> break
  od;
  i_ = 0; j_ = 0; n_ = 0; rd_ = false
}

/* the plain lock string's PX ran out: Redis deletes it */
inline expireLock() {
  if
  :: lockOwner != NONE && now >= lockExp -> lockOwner = NONE; lockExp = 0
  :: else -> skip
  fi
}

/* next_fence(counter, 1) */
inline nextFence(t) {
  ctr++;
  assert(ctr < 250);            /* BOUND */
  t = ctr
}

/* a grant by Redis: P2 */
inline grantToken(t) {
  assert(t > lastTok);          /* P2: a token of its own, greater than every earlier one */
  lastTok = t
}

/* P8 at a grant of place x from the queue: no live place queued before it */
inline assertHead(x) {
  i_ = 0;
  do
  :: i_ < NC ->
     assert(!(inq[i_] && qb[i_] >= now && qsc[i_] < qsc[x]));   /* P8: no live place that queued earlier is passed over */
     i_++
  :: else -> break
  od;
  i_ = 0
}

/* P8 at a grant to a newcomer: no live place queued */
inline assertNoneQueued() {
  i_ = 0;
  do
  :: i_ < NC ->
     assert(!(inq[i_] && qb[i_] >= now));   /* P8: a newcomer is granted only with no live place queued */
     i_++
  :: else -> break
  od;
  i_ = 0
}

/* the first place of the queue (lowest score), NONE if none */
inline headOf(h) {
  h = NONE; i_ = 0;
  do
  :: i_ < NC ->
     if
     :: inq[i_] && (h == NONE || qsc[i_] < qsc[h]) -> h = i_
     :: else -> skip
     fi;
     i_++
  :: else -> break
  od;
  i_ = 0
}

#define ANY_INQ (inq[0] || inq[1] || inq[2])
#define ANY_HLD (hld[0] || hld[1] || hld[2])

/* shaped.lua live_holders: drops lapsed holders; count, readers, smallest limit */
inline liveHolders() {
  cnt_ = 0; rd_ = false; sm_ = 255; i_ = 0;
  do
  :: i_ < NC ->
     if
     :: hld[i_] && hexp[i_] < now -> hld[i_] = false; hexp[i_] = 0
     :: else -> skip
     fi;
     if
     :: hld[i_] -> cnt_++;
        if
        :: lim[i_] == 0 -> rd_ = true; sm_ = 0
        :: lim[i_] != 0 && lim[i_] < sm_ -> sm_ = lim[i_]
        :: else -> skip
        fi
     :: else -> skip
     fi;
     i_++
  :: else -> break
  od;
  i_ = 0
}

/* shaped.lua admits(count, readers, smallest, limit) */
#ifndef BROKEN_ADMITS
#define ADMITS(lm) (cnt_ == 0 || (lm == 0 && rd_) || (lm != 0 && !rd_ && cnt_ < lm && cnt_ < sm_))
#else
#define ADMITS(lm) (cnt_ == 0 || (lm == 0 && rd_) || (lm != 0 && !rd_ && cnt_ <= lm && cnt_ <= sm_))
#endif

/* a grant message on the member's process's channel */
inline publishGrant(x, t) {
  msg[x] = true; mtok[x] = t
}

/* common.lua grant_next, for a live plain head x: K is x's with a capped lease */
inline grantNext(x) {
  assertHead(x);
  inq[x] = false; qb[x] = 0; qsc[x] = 0;
  nextFence(f_); grantToken(f_);
  lockOwner = x; lockExp = now + CAP;
  publishGrant(x, f_); f_ = 0;
  hand_ = true
}

/* shaped.lua grant_shaped: x beside the holders, with a token and a lease of its own */
inline grantShaped(x) {
  assertHead(x);
  inq[x] = false; qb[x] = 0; qsc[x] = 0;
#ifndef BROKEN_TOKEN_REUSE
  nextFence(f_);
#else
  f_ = ctr;
#endif
  grantToken(f_);
  hld[x] = true; hexp[x] = now + CAP;
  publishGrant(x, f_); f_ = 0
}

/* shaped.lua pass_on (after live_holders): the queue's head while it may; hand_: a plain one got K */
inline passOn() {
  liveHolders();
  hand_ = false;
  do
  :: true ->
     headOf(hd_);
     if
     :: hd_ == NONE -> break
     :: hd_ != NONE && qb[hd_] < now -> inq[hd_] = false; qb[hd_] = 0; qsc[hd_] = 0   /* lapsed: dropped */
     :: hd_ != NONE && qb[hd_] >= now && lim[hd_] == PLAIN ->
        if
        :: cnt_ == 0 -> grantNext(hd_)
        :: else -> skip
        fi;
        break
     :: hd_ != NONE && qb[hd_] >= now && lim[hd_] != PLAIN && ADMITS(lim[hd_]) ->
        lockOwner = NONE; lockExp = 0;         /* DEL lock: its holder is letting go */
        grantShaped(hd_);
        if
        :: cnt_ == 0 -> rd_ = (lim[hd_] == 0); sm_ = lim[hd_]
        :: else -> skip
        fi;
        if
        :: lim[hd_] > 0 && lim[hd_] < sm_ -> sm_ = lim[hd_]
        :: else -> skip
        fi;
        cnt_++
     :: hd_ != NONE && qb[hd_] >= now && lim[hd_] != PLAIN && !ADMITS(lim[hd_]) -> break
     fi
  od;
  hd_ = 0; cnt_ = 0; sm_ = 0; rd_ = false
}

/* a place for c: its score from the counter, its heart-beat */
inline enqueue(c) {
  nextFence(f_);
  inq[c] = true; qsc[c] = f_; qb[c] = now + HB; f_ = 0
}

/* acquire.lua (mode "wait"): gr = the fencing token of a grant, 0 when queued */
inline acquirePlain(c, gr) {
  expireLock();
  gr = 0;
  if
  :: lockOwner == NONE && !ANY_INQ && !ANY_HLD ->
     assertNoneQueued(); nextFence(gr); grantToken(gr); lockOwner = c; lockExp = now + L
  :: else ->
     if
     :: lockOwner == NONE ->
        passOn();
        if
        :: !hand_ && !ANY_INQ && !ANY_HLD ->
           assertNoneQueued(); nextFence(gr); grantToken(gr); lockOwner = c; lockExp = now + L
        :: else -> skip
        fi;
        hand_ = false
     :: else -> skip
     fi;
     if
     :: gr == 0 -> enqueue(c)
     :: else -> skip
     fi
  fi
}

/* shaped-acquire.lua (mode "wait") */
inline acquireShaped(c, gr) {
  expireLock();
  gr = 0;
  if
  :: lockOwner == NONE ->
     passOn();
     if
#ifndef BROKEN_READER_PASSES
     :: !hand_ && !ANY_INQ ->
#else
     :: !hand_ ->
#endif
        liveHolders();
        if
        :: ADMITS(lim[c]) ->
           assertNoneQueued(); nextFence(gr); grantToken(gr); hld[c] = true; hexp[c] = now + L
        :: else -> skip
        fi;
        cnt_ = 0; sm_ = 0; rd_ = false
     :: else -> skip
     fi;
     hand_ = false
  :: else -> skip
  fi;
  if
  :: gr == 0 -> enqueue(c)
  :: else -> skip
  fi
}

/* release.lua (keep 0): ok = the key was still c's */
inline releasePlain(c, ok) {
  expireLock();
  if
  :: lockOwner != c -> ok = false
  :: else ->
     ok = true;
     hand_ = false;
     if
     :: ANY_INQ -> passOn()
     :: else -> skip
     fi;
     if
     :: !hand_ -> lockOwner = NONE; lockExp = 0
     :: else -> skip
     fi;
     hand_ = false
  fi
}

/* leave.lua: a plain waiter gives up its place (or a grant it could not use) */
inline leavePlain(c) {
  inq[c] = false; qb[c] = 0; qsc[c] = 0;
  expireLock();
  if
  :: lockOwner != NONE && lockOwner != c -> skip
  :: else ->
     j_ = lockOwner;
     passOn();
     if
     :: !hand_ && j_ != NONE -> lockOwner = NONE; lockExp = 0
     :: else -> skip
     fi;
     hand_ = false; j_ = 0
  fi
}

/* shaped-release.lua: leaves the holders and the queue; passes on what it freed */
inline releaseShaped(c, ok) {
  ok = (hld[c] && hexp[c] >= now);
  hld[c] = false; hexp[c] = 0; inq[c] = false; qb[c] = 0; qsc[c] = 0;
  expireLock();
  if
  :: lockOwner == NONE -> passOn(); hand_ = false
  :: else -> skip
  fi
}

/* heartbeat.lua / shaped-heartbeat.lua: refresh c's place; pass on a free key */
inline heartbeat(c) {
  if
  :: inq[c] -> qb[c] = now + HB
  :: else -> skip
  fi;
  expireLock();
  if
  :: lockOwner == NONE -> passOn(); hand_ = false
  :: else -> skip
  fi
}

/* extend.lua / shaped-extend.lua: an owner-checked longer lease */
inline extend(c, ok) {
  expireLock();
  if
  :: lim[c] == PLAIN -> ok = (lockOwner == c); if :: ok -> lockExp = now + L :: else -> skip fi
  :: else -> ok = (hld[c] && hexp[c] >= now); if :: ok -> hexp[c] = now + L :: else -> skip fi
  fi
}

/* the caller gives up a place or a grant: leave.lua or shaped-release.lua */
inline letGo(c, ok) {
  if
  :: lim[c] == PLAIN -> leavePlain(c)
  :: else -> releaseShaped(c, ok); ok = false
  fi
}

/* `requeue`: c waits again at the tail under a new token (the model keeps the caller's
   number: what Redis keeps of the old token — a lapsed holding, dropped unread by the
   next live_holders — goes, and a message for it is read by nobody) */
inline requeue(c) {
  requeues++;
  hld[c] = false; hexp[c] = 0; msg[c] = false; mtok[c] = 0;
  ph[c] = sending
}

proctype caller(byte c) {
  byte t = 0;
  byte sent = 0;
  bool ok = false;
  {
  do
  :: ph[c] == sending ->
    /* send: the acquire script, in mode "wait" */
    atomic {
      sent = now;
      if
      :: lim[c] == PLAIN -> acquirePlain(c, t)
      :: else -> acquireShaped(c, t)
      fi
    };
    /* the reply */
    atomic {
      if
      :: t != 0 -> tok[c] = t; lend[c] = sent + L; ph[c] = granted; checkHolders()
      :: else -> ph[c] = queued; hbAt[c] = sent
      fi
    };
    if
    :: ph[c] == queued ->
end_queued:
       do
       :: atomic { msg[c] ->
            msg[c] = false; t = mtok[c]; mtok[c] = 0;
            if
            :: (now - resp[c]) * 3 <= CAP -> tok[c] = t; lend[c] = resp[c] + CAP; ph[c] = granted; checkHolders()
            :: else -> ph[c] = confirming
            fi
          };
          break
       :: atomic { hbAt[c] < now -> hbAt[c] = now; heartbeat(c);
            /* the reply names c missing (neither queued nor holding): its place lapsed */
            if
            :: !inq[c] && !msg[c] && !(hld[c] && hexp[c] >= now) && lockOwner != c && requeues < REQUEUES -> requeue(c)
            :: else -> skip
            fi };
          if
          :: ph[c] == sending -> break
          :: else -> skip
          fi
       :: atomic { giveups < GIVEUPS -> giveups++; letGo(c, ok); msg[c] = false; mtok[c] = 0; ph[c] = gave_up }; break
       od;
       if
       :: ph[c] == confirming ->
          atomic { sent = now; extend(c, ok) };
          atomic {
            if
            :: ok && (now - sent) * 3 <= L -> tok[c] = t; lend[c] = sent + L; ph[c] = granted; checkHolders()
            :: ok && (now - sent) * 3 > L -> letGo(c, ok);     /* late: the grant goes back */
               if :: requeues < REQUEUES -> requeue(c) :: else -> ph[c] = gave_up fi
            :: !ok -> if :: requeues < REQUEUES -> requeue(c) :: else -> ph[c] = gave_up fi
            fi
          }
       :: else -> skip
       fi
    :: else -> skip
    fi
  :: ph[c] != sending -> break
  od;
    if
    :: ph[c] == granted ->
       /* renew: while the lease as last confirmed runs */
       if
       :: atomic { renews < RENEWS && !told[c] && now < lend[c] -> renews++; sent = now; extend(c, ok) };
          atomic {
            if
            :: ok && !told[c] -> lend[c] = sent + L; checkHolders()
            :: ok && told[c] -> skip
            :: !ok -> told[c] = true
            fi
          }
       :: true -> skip
       fi;
       /* the write: past its lease as last confirmed the holder is told first */
       atomic {
         if
         :: now >= lend[c] -> told[c] = true
         :: else -> checkHolders()
         fi
       };
       /* release */
       atomic {
         if
         :: lim[c] == PLAIN -> releasePlain(c, ok)
         :: else -> releaseShaped(c, ok)
         fi;
         released[c] = true
       }
    :: else -> skip
    fi
  } unless { crashed[c] }
}

/* the clock, the stall monitors' ticks and the crashes */
proctype world() {
end_world:
  do
  :: atomic { now < TMAX -> now++ }
  :: atomic { !crashed[0] && ph[0] == queued && !msg[0] && resp[0] < now -> resp[0] = now }
  :: atomic { !crashed[1] && ph[1] == queued && !msg[1] && resp[1] < now -> resp[1] = now }
  :: atomic { !crashed[2] && ph[2] == queued && !msg[2] && resp[2] < now -> resp[2] = now }
  :: atomic { crashes < CRASHES && !crashed[0] && !released[0] && ph[0] != gave_up -> crashes++; crashed[0] = true }
  :: atomic { crashes < CRASHES && !crashed[1] && !released[1] && ph[1] != gave_up -> crashes++; crashed[1] = true }
  :: atomic { crashes < CRASHES && !crashed[2] && !released[2] && ph[2] != gave_up -> crashes++; crashed[2] = true }
  od
}

init {
  atomic {
#if MIX == 0
    lim[0] = N; lim[1] = N; lim[2] = N;
#elif MIX == 1
    lim[0] = 0; lim[1] = PLAIN; lim[2] = 0;
#else
    lim[0] = N; lim[1] = PLAIN; lim[2] = N;
#endif
    ph[0] = sending; ph[1] = sending; ph[2] = sending;
    run world();
    run caller(0);
    run caller(1);
    run caller(2)
  }
}
