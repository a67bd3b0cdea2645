/*
 * oncely's server protocol, one key, checked by spin (see README.md for the map to the code).
 *
 *   Handler(1)  a request handler serving client A (the original request, then its retries)
 *   Handler(2)  a second handler: client A's concurrent retry, or a client that reuses the
 *               key with another body (chosen once, then kept)
 *   Worker()    the recovery worker (sweep, takeOver, resume from the recovery point)
 *   External()  delivers an instruction still on the wire, or loses it
 *   Clock()     lets a lease run out (a crashed owner's at any time, a live owner's MAXSTALL times)
 *
 * The operation is the payment's shape cut to one external call:
 *   H1 (local) -> EXT_SENT -> call/probe by the derived key -> EXT_DONE -> final (H2 work + finished)
 *
 * Build: spin -a [-DMUTATION=n] [-DCHECK=p] [-DLIVENESS] server.pml (check.mjs does it all).
 */

#ifndef MUTATION
#define MUTATION 0      /* 0: the code as it is; 1..7: the mutants of README.md */
#endif
#ifndef CHECK
#define CHECK 0         /* 0: every safety property; n: only property Pn (a mutant's target) */
#endif
#ifndef MAXCRASH
#define MAXCRASH 1      /* actor crashes in one run (each actor restarts: the client retries) */
#endif
#ifndef MAXSTALL
#define MAXSTALL 1      /* leases of live owners that run out (a stall longer than the lease) */
#endif
#ifndef MAXUNKNOWN
#define MAXUNKNOWN 1    /* external calls or probes that time out (outcome unknown) */
#endif
#ifndef MAXUNAVAIL
#define MAXUNAVAIL 1    /* transient failures: external 503, or H1's work throwing */
#endif

#define ON(n) (CHECK == 0 || CHECK == n)

#define WORKER 3
#define BODY_A 1
#define BODY_B 2

/* recovery points (PROTOCOL.md "Recovery points"; the payment has two external calls) */
#define NONE     0
#define H1_DONE  1
#define EXT_SENT 2
#define EXT_DONE 3

/* the external system's record under a derived key */
#define ABSENT   0
#define APPLIED  1
#define DECLINED 2

/* outcome of a call or probe (src/server/types.ts ExternalOutcome / ProbeOutcome) */
#define O_DONE        1
#define O_REFUSED     2
#define O_UNKNOWN     3
#define O_UNAVAILABLE 4
#define O_ABSENT      5

/* kinds of stored response; a response is kind*4 + the actor that stored it */
#define R_OK      1   /* 201 */
#define R_REFUSED 2   /* 402, a decline by the external system */
#define R_FAILED  3   /* only mutant 6: an unknown outcome stored as a failure */

/* answers to a client */
#define A_FINAL 1
#define A_409   2
#define A_422   3
#define A_202   4
#define A_503   5

/* ---- the key row (oncely_keys): one (client_id, key) ---- */
bool exists;          /* the row is there (admitted, not forgotten) */
bool fin;             /* state = 'finished' (else 'started') */
byte point;           /* recovery_point */
byte body;            /* request_hash: which body admitted the key */
byte token;           /* lease_token: 0 = NULL, else the actor that holds it */
bool expired;         /* lease_expires_at <= now (the store's clock) */
byte resp;            /* the stored response (0 = none) */
/* ---- application tables, written in the same transactions as the row ---- */
byte h1_work;         /* H1's rows (the payment row, in the reference app) */
byte h2_work;         /* the final step's rows (the ledger posting) */
/* ---- the external system, by derived key (index 0 = Kn; mutant 5 uses the actor's id) ---- */
byte ext[4];
byte inflight;        /* bit k: an instruction under key k still on the wire */
byte effects;         /* keys applied = effects on the external system */
/* ---- ghosts: who believes it owns the key ---- */
bool owns[4];         /* actor i's current attempt holds a lease */
bool live[4];         /* ... and that lease has not run out by the clock */
/* ---- fault budgets ---- */
byte crashes; byte stalls; byte unknowns; byte unavails;

#if MUTATION == 5
#define KEY(me) (me)            /* a fresh key per attempt instead of the derived Kn */
#else
#define KEY(me) 0               /* Kn, a uuid5 of (client_id, key, n): the same for every attempt */
#endif

#if MUTATION == 4
#define FENCE(me) (exists)      /* writes that do not look at the lease token */
#else
#define FENCE(me) (exists && !fin && token == me)   /* ... WHERE state = 'started' AND lease_token = $mine */
#endif

#if MUTATION == 1
#define TAKEOVER_COND (exists && !fin)                  /* no lease condition */
#elif MUTATION == 7
#define TAKEOVER_COND (exists && !fin && token == 0)    /* released rows only, never an expired lease */
#else
#define TAKEOVER_COND (exists && !fin && (token == 0 || expired))
#endif

#define OWNERS ((owns[1] && live[1]) + (owns[2] && live[2]) + (owns[3] && live[3]))

/* P1 no phase runs twice */
#define P1 assert(!ON(1) || (h1_work <= 1 && h2_work <= 1))
/* P2 each external effect at most once per request ... */
#define P2_ONCE assert(!ON(2) || effects <= 1)
/* ... and exactly once when the request finishes (with every phase's work, once) */
#define P2_FINISHED assert(!ON(2) || \
  ((resp / 4 == R_OK) -> (effects == 1 && ext[KEY(me)] == APPLIED && h1_work == 1 && h2_work == 1) \
                       : (effects == 0 && h1_work == 1 && h2_work == 0)))
/* P3 at most one live owner */
#define P3 assert(!ON(3) || OWNERS <= 1)
/* P4 (with the check at each answer) the final response is stored once and never replaced */
#define P4_ONCE assert(!ON(4) || !fin)
/* P5 an unknown outcome is never reported as failed: a refusal is the external system's own */
#define P5 assert(!ON(5) || ext[KEY(me)] == DECLINED)

#define CRASH \
  if \
  :: crashes < MAXCRASH -> crashes++; goto crashed \
  :: true \
  fi

#define REFRESH(me) expired = false; live[me] = true; P3

/* the external system applies a key at most once: a later instruction under it is a replay */
inline apply(k) {
  if
  :: ext[k] == ABSENT ->
     if
     :: ext[k] = APPLIED; effects++
     :: ext[k] = DECLINED
     fi
  :: else
  fi;
  P2_ONCE
}

/* step.call(ctx, Kn): a reply, a 503, or no reply (applied, or still on the wire) */
inline call(k) {
  atomic {
    if
    :: unavails < MAXUNAVAIL -> unavails++; out = O_UNAVAILABLE
    :: apply(k); out = (ext[k] == APPLIED -> O_DONE : O_REFUSED)
    :: unknowns < MAXUNKNOWN -> unknowns++; apply(k); out = O_UNKNOWN
    :: unknowns < MAXUNKNOWN -> unknowns++; inflight = inflight | (1 << k); out = O_UNKNOWN
    fi
  }
}

/* step.probe(ctx, Kn): what the system did under Kn, or no answer */
inline probe(k) {
  atomic {
    if
    :: ext[k] == APPLIED -> out = O_DONE
    :: ext[k] == DECLINED -> out = O_REFUSED
    :: ext[k] == ABSENT -> out = O_ABSENT
    :: unknowns < MAXUNKNOWN -> unknowns++; out = O_UNKNOWN
    fi
  }
}

/*
 * runSteps (src/server/phases.ts) from the point `p` read under the lease, then the answer
 * (src/server/answers.ts respond). Jumps to `answered` with `ans` set, or to `crashed`.
 */
inline run_steps(me) {
  if
  :: p == NONE ->
     if
     :: unavails < MAXUNAVAIL -> unavails++; goto transient    /* H1's work threw: nothing committed */
     :: true ->
#if MUTATION == 3
        /* the work in one transaction, its recovery point in another */
        atomic { if :: FENCE(me) -> h1_work++; P1 :: else -> goto lost fi };
        CRASH;
        atomic { if :: FENCE(me) -> point = H1_DONE; REFRESH(me) :: else -> goto lost fi };
#else
        atomic { if :: FENCE(me) -> h1_work++; P1; point = H1_DONE; REFRESH(me) :: else -> goto lost fi };
#endif
        p = H1_DONE
     fi;
     CRASH
  :: else
  fi;
  if
  :: p == H1_DONE ->
     /* EXT_SENT, durable, before the call */
     atomic { if :: FENCE(me) -> point = EXT_SENT; REFRESH(me) :: else -> goto lost fi };
     CRASH;
     call(KEY(me))
  :: p == EXT_SENT ->
     /* resumed at EXT_SENT: ambiguous, so probe by Kn; only "absent" calls again (same Kn) */
     probe(KEY(me));
     if
     :: out == O_ABSENT -> call(KEY(me))
     :: else
     fi
  :: p == EXT_DONE -> out = O_DONE
  fi;
  CRASH;
  if
  :: out == O_DONE ->
     if
     :: p != EXT_DONE ->
        atomic { if :: FENCE(me) -> point = EXT_DONE; REFRESH(me) :: else -> goto lost fi };
        CRASH
     :: else
     fi;
#if MUTATION == 2
     /* the response stored first, the last phase's work after it */
     atomic { if :: FENCE(me) -> P4_ONCE; fin = true; resp = R_OK * 4 + me; token = 0; expired = false; owns[me] = false; live[me] = false; P2_FINISHED :: else -> goto lost fi };
     CRASH;
     atomic { h2_work++; P1 };
#else
     /* the final step: its work + state=finished + the response, one transaction */
     atomic { if :: FENCE(me) -> h2_work++; P1; P4_ONCE; fin = true; resp = R_OK * 4 + me; token = 0; expired = false; owns[me] = false; live[me] = false; P2_FINISHED :: else -> goto lost fi };
#endif
     ans = A_FINAL; ansresp = R_OK * 4 + me
  :: out == O_REFUSED ->
     /* a decline is final: stored and replayed */
     atomic { if :: FENCE(me) -> P5; P4_ONCE; fin = true; resp = R_REFUSED * 4 + me; token = 0; expired = false; owns[me] = false; live[me] = false; P2_FINISHED :: else -> goto lost fi };
     ans = A_FINAL; ansresp = R_REFUSED * 4 + me
  :: out == O_UNKNOWN ->
#if MUTATION == 6
     /* an unknown outcome stored as a failure */
     atomic { if :: FENCE(me) -> P5; P4_ONCE; fin = true; resp = R_FAILED * 4 + me; token = 0; expired = false; owns[me] = false; live[me] = false :: else -> goto lost fi };
     ans = A_FINAL; ansresp = R_FAILED * 4 + me
#else
     /* park: the lease cleared, the row kept at its point (202) */
     atomic { if :: FENCE(me) -> token = 0; expired = false; owns[me] = false; live[me] = false :: else -> goto lost fi };
     ans = A_202
#endif
  :: out == O_UNAVAILABLE -> goto transient
  fi;
  goto answered;
transient:
  /* giveUp: a request releases (forgetting a row with no recovery point), the worker parks */
  atomic {
    if
    :: FENCE(me) ->
       if
       :: me != WORKER && point == NONE ->
          exists = false; body = 0; token = 0; expired = false; resp = 0
       :: else -> token = 0; expired = false
       fi;
       owns[me] = false; live[me] = false
    :: else   /* the lease was lost: the release changes nothing */
    fi
  };
  ans = A_503;
  goto answered;
lost:
  /* a fenced write found another token: this attempt stops (respond 'lost' = 409) */
  owns[me] = false;
  ans = A_409
}

proctype Handler(byte me) {
  byte mybody = BODY_A;
  bool mine;
  byte p, out, ans, ansresp;
  if
  :: me == 2 -> if :: mybody = BODY_B :: true fi
  :: else
  fi;
attempt:
  atomic { mine = false; p = NONE; out = 0; ans = 0; ansresp = 0 };
  /* admit: INSERT ... ON CONFLICT DO NOTHING RETURNING; a conflict loads the row */
  atomic {
    if
    :: !exists ->
       exists = true; fin = false; point = NONE; body = mybody; resp = 0;
       token = me; expired = false; owns[me] = true; live[me] = true; P3;
       mine = true
    :: else ->
       if
       :: body != mybody -> ans = A_422                         /* fingerprint first */
       :: body == mybody && fin -> ans = A_FINAL; ansresp = resp  /* replay */
       :: body == mybody && !fin && token != 0 && !expired -> ans = A_409   /* in flight */
       :: else                                                  /* lease gone: take over */
       fi
    fi
  };
  if
  :: mine -> CRASH; goto execute
  :: !mine && ans != 0 -> goto answered   /* (a crash now only loses the answer: the client retries) */
  :: else
  fi;
  /* takeOver: UPDATE ... WHERE state='started' AND (lease_token IS NULL OR lease expired) */
  atomic {
    if
    :: TAKEOVER_COND -> token = me; expired = false; owns[me] = true; live[me] = true; P3; mine = true
    :: else -> ans = A_409                                       /* lost the race */
    fi
  };
  if
  :: !mine -> goto answered
  :: else
  fi;
  p = point;          /* reload under the lease */
  CRASH;
execute:
  run_steps(me);
answered:
  /* P4 a client sees only the stored final response, 409, or 422 for another body (or 202/503) */
  atomic {
    if
    :: ans == A_FINAL ->
       assert(!ON(4) || (fin && resp == ansresp && body == mybody))
    :: else   /* a 422 is decided from the row read by the conflicting INSERT itself */
    fi
  };
  if
  :: ans == A_FINAL || ans == A_422 -> goto done
  :: else -> goto attempt      /* 409, 202, 503: the client retries with the same key and body */
  fi;
crashed:
  owns[me] = false;
  goto attempt;
done:
  skip
}

proctype Worker() {
  byte me = WORKER;
  bool mine;
  byte p, out, ans, ansresp;
idle:
  atomic { mine = false; p = NONE; out = 0; ans = 0; ansresp = 0 };
  /* sweep: started rows with no live lease */
end_idle:
  (exists && !fin && (token == 0 || expired));
  atomic {
    if
    :: TAKEOVER_COND -> token = me; expired = false; owns[me] = true; live[me] = true; P3; mine = true
    :: else
    fi
  };
  if
  :: !mine -> goto idle       /* busy: someone else took it */
  :: else
  fi;
  p = point;
  CRASH;
  run_steps(me);
answered:
  goto idle;
crashed:
  owns[me] = false;
  goto idle
}

/* an instruction on the wire arrives (applied under its key, at most once) or is lost */
proctype External() {
  byte k;
end:
  do
  :: atomic {
       inflight != 0 ->
       if
       :: inflight & 1 -> k = 0
       :: inflight & 2 -> k = 1
       :: inflight & 4 -> k = 2
       :: inflight & 8 -> k = 3
       fi;
       inflight = inflight & ~(1 << k);
       if
       :: apply(k)
       :: true
       fi;
       k = 0
     }
  od
}

/* time passes: the current lease runs out (a crashed owner's always may; a live one's MAXSTALL times) */
proctype Clock() {
end:
  do
  :: atomic {
       token != 0 && !expired && (!owns[token] || stalls < MAXSTALL) ->
       if
       :: owns[token] -> stalls++
       :: else
       fi;
       expired = true; live[token] = false
     }
  od
}

init {
  atomic {
    run Handler(1);
    run Handler(2);
    run Worker();
    run External();
    run Clock()
  }
}

#ifdef LIVENESS
/* P6 every request whose clients keep retrying finishes (run with pan -a -f: weak fairness) */
ltl finishes { <> fin }
#endif
