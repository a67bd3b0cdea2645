/*
 * oncely's client journal: two processes sharing one journal claim and resume one operation,
 * either may crash anywhere (see README.md for the map to the code).
 *
 *   Client(1)  the process that called post(): it journaled the record (submitted) already
 *              claimed, in the same write (Journal.put's `claim`), and sends it with the record
 *              in hand (`fresh`); that claim stands for its first attempt's
 *   Client(2)  another process running resume(): it claims the record first, then sends it
 *   A crashed process restarts and runs resume(); a chain that ended pending may be resumed again.
 *
 * The server is abstract (server.pml checks it): under one key it applies or declines once and
 * replays that answer; any attempt may get 409/202/503 or no answer at all.
 *
 * Build: spin -a [-DMUTATION=n] [-DCHECK=p] [-DSTALL] journal.pml (check.mjs does it all).
 */

#ifndef MUTATION
#define MUTATION 0      /* 0: the code as it is; 11..15: the mutants of README.md */
#endif
#ifndef CHECK
#define CHECK 0         /* 0: every property; n: only property Kn */
#endif
#ifndef MAXCRASH
#define MAXCRASH 2      /* process crashes in one run (each restarts and resumes) */
#endif
#ifndef MAXREFUSE
#define MAXREFUSE 1     /* attempts whose headers fetch refuses (headers() evaluated per attempt) */
#endif
#ifndef PREPARED
#define PREPARED 0      /* 1: both processes send() one prepared operation (two tabs, one natural key) */
#endif
#ifndef STALL
#define STALL 0         /* 1: a live holder's claim may run out once (its keep-alive was late) */
#endif

#define ON(n) (CHECK == 0 || CHECK == n)

#define PENDING   0
#define SUCCEEDED 1
#define FAILED    2

/* the server's outcome under the key, and an attempt's answer */
#define S_NONE     0
#define S_APPLIED  1   /* 201, then replayed */
#define S_DECLINED 2   /* 402, then replayed */
#define S_RETRY    3   /* 409 / 202 / 503: retried */
#define S_LOST     4   /* no answer (network error, timeout): unknown */

/* ---- the journal row (oncely_operations) ---- */
byte state;              /* PENDING / SUCCEEDED / FAILED */
byte claim;              /* claim_owner: 0 = none, else the process */
bool claim_dead;         /* the holder's process is gone (isProvablyDead, or its claim ran out) */
bool claim_expired;      /* claimed_until <= now while the holder lives (STALL only) */
byte rec_key = 1;        /* the key, journaled by put() before anything is sent */
bool submitted = (PREPARED == 0); /* submitted_at set: resume() may send it (post() journals it so) */
/* ---- the server and the wire ---- */
byte srv;                /* S_NONE / S_APPLIED / S_DECLINED */
bool sent_any;           /* some request under the key has left a process */
byte keys_sent;          /* bit k: a request with key k was sent */
/* ---- budgets ---- */
byte crashes; byte refusals; byte stalls;

/* K1 the request is sent with one key: the journaled one */
#define K1 assert(!ON(1) || key == rec_key)
/* K2 never both "succeeded" (or settled) and re-sent */
#define K2 assert(!ON(2) || state == PENDING)
/* K3 an attempt with no answer is never settled as failed: failed only when nothing was sent or the server declined */
#define K3 assert(!ON(3) || !sent_any || srv == S_DECLINED)

#if MUTATION == 14
#define FREE(me) (claim == 0 || claim == me || claim_dead || claim_expired)   /* any state */
#else
#define FREE(me) (state == PENDING && (claim == 0 || claim == me || claim_dead || claim_expired))
#endif

#define TAKE(me) claim = me; claim_dead = false; claim_expired = false

/* journal.claim(): one immediate transaction (read the holder, write the claim) */
#if MUTATION == 13
#define CLAIM(me) \
  if \
  :: FREE(me) -> got = true \
  :: else -> got = false \
  fi; \
  if \
  :: got -> TAKE(me) \
  :: else \
  fi
#else
#define CLAIM(me) \
  atomic { \
    if \
    :: FREE(me) -> TAKE(me); got = true \
    :: else -> got = false \
    fi \
  }
#endif

#define CRASH \
  if \
  :: crashes < MAXCRASH -> crashes++; goto crashed \
  :: true \
  fi

proctype Client(byte me) {
  bool fresh = (me == 1 && PREPARED == 0);   /* post(): the record this call just created, handed over */
  bool sending = (PREPARED != 0);            /* send() of a prepared record: its first chain */
  bool held;                  /* claimHeld: the claim put() created the record with, for the first attempt */
  bool untouched, sentHere, got;
  byte key, answer;
start:
  if
  :: fresh
  :: sending                            /* send(): the record is read, then claimed below */
  :: else ->
     /* resumeOne(): a submitted pending record is claimed first, else skipped */
     if
     :: !submitted -> goto stop
     :: else
     fi;
     CLAIM(me);
     if
     :: !got -> goto stop
     :: else
     fi
  fi;
  /* runChain(): the record as read (or handed over) */
  if
  :: state != PENDING -> goto stop      /* fromSettled: its stored result, no request */
  :: else
  fi;
  /* untouched: this chain has held the claim without a break since the record was created
     (post()) or submitted (send() of a prepared one) */
  if
  :: sending ->
#if MUTATION == 16
     submitted = true;                  /* marked submitted first: resume() elsewhere may take it up */
     untouched = true;                  /* the code as it was: "only prepared, so never sent" */
     CRASH;
     CLAIM(me); held = false;
     if :: !got -> untouched = false :: else fi
#else
     CLAIM(me);                         /* claimed before it is marked submitted */
     CRASH;
     /* read again under the claim: another tab may have submitted and sent it meanwhile */
     held = got && !submitted;
     submitted = true                   /* update(submittedAt): resume() may take it up from here */
#endif
  :: else -> held = fresh && claim == me
  fi;
#if MUTATION == 15
  untouched = fresh;          /* "created by this call" taken for "nobody else can have sent it" */
#elif MUTATION == 16
  if :: !sending -> untouched = held :: else fi;
#else
  untouched = held;
#endif
  fresh = false; sending = false; sentHere = false;
  key = rec_key;
attempt:
  CRASH;
  if
  :: held -> got = true; held = false     /* the first attempt of post(): no claim call */
  :: else -> CLAIM(me); if :: !got -> untouched = false :: else fi
  fi;
  if
  :: got ->
     CRASH;
     if
     :: refusals < MAXREFUSE ->
        /* headers fetch would refuse: failed if nothing can have been sent, else left pending */
        refusals++;
#if MUTATION == 12
        if
        :: !sentHere ->          /* "this chain sent nothing" taken for "nothing was sent" */
#else
        if
        :: untouched && !sentHere ->
#endif
           atomic { K3; state = FAILED; claim = 0 };
           goto stop
        :: else -> goto ended
        fi
     :: true
     fi;
#if MUTATION == 11
     key = key + 1;              /* a key minted for every attempt */
#endif
     /* the attempt: journaled bytes + the key, and what comes back */
     atomic {
       K1; K2;
       keys_sent = keys_sent | (1 << key);
       sent_any = true; sentHere = true;
       if
       :: srv == S_NONE -> if :: srv = S_APPLIED :: srv = S_DECLINED fi;
          if :: answer = srv :: answer = S_LOST fi
       :: srv != S_NONE -> if :: answer = srv :: answer = S_LOST fi
       :: answer = S_RETRY
       :: answer = S_LOST
       fi
     };
     CRASH;
     if
     :: answer == S_APPLIED -> atomic { state = SUCCEEDED; claim = 0 }; goto stop
     :: answer == S_DECLINED -> atomic { K3; state = FAILED; claim = 0 }; goto stop
     :: else ->
        /* retry (the claim kept) or give up for now (OperationPendingError): pending either way */
        answer = 0;
        if
        :: goto attempt
        :: goto ended
        fi
     fi
  :: else ->
     /* claimed elsewhere: settled meanwhile? else wait and try again */
     if
     :: state != PENDING -> goto stop
     :: else -> goto attempt
     fi
  fi;
ended:
  /* finally: the claim released unless settled; the operation may be resumed later */
  atomic { if :: claim == me -> claim = 0 :: else fi };
  if
  :: goto start
  :: goto stop
  fi;
crashed:
  /* the process is gone: its claim is provably dead; it restarts and runs resume() */
  atomic { if :: claim == me -> claim_dead = true :: else fi; fresh = false; sending = false; answer = 0 };
  goto start;
stop:
  skip
}

#if STALL
/* a live holder blocked longer than the claim: its claim runs out once */
proctype Clock() {
end:
  do
  :: atomic { claim != 0 && !claim_dead && !claim_expired && stalls < 1 -> stalls++; claim_expired = true }
  od
}
#endif

init {
  atomic {
#if MUTATION != 15
    if
    :: PREPARED == 0 -> claim = 1   /* put() stores the record claimed by its creator, in the same write */
    :: else
    fi;
#endif
    run Client(1);
    run Client(2);
#if STALL
    run Clock()
#endif
  }
}
