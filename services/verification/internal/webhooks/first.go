package webhooks

import (
	"context"
	"time"
)

// firstAttemptWait is how long the matcher's transaction waits for the first attempts it started: an
// attempt that ends sooner is recorded with its delivery, in that transaction; a later one records
// its own outcome once the transaction has committed. It is short because the transaction holds a
// connection and the change meanwhile: a slow receiver must not slow the matching of other changes.
const firstAttemptWait = 5 * time.Millisecond

// firstAttempts are the first attempts of one change's deliveries, sent by the replica that matched
// the change during its transaction (Store.MatchNext).
type firstAttempts struct {
	s       *Service
	ctx     context.Context
	leased  time.Time
	running []*firstAttempt
}

type firstAttempt struct {
	claim Claim
	out   Outcome
	err   error
	done  chan struct{} // closed when the attempt has ended
	// record is told, once the transaction has ended, whether the attempt must record its outcome
	// itself: the transaction committed without it.
	record chan bool
	inTx   bool
}

// send starts the attempt of each claim and returns wait.
func (f *firstAttempts) send(claims []Claim) func() []Attempted {
	for _, c := range claims {
		a := &firstAttempt{claim: c, done: make(chan struct{}), record: make(chan bool, 1)}
		f.running = append(f.running, a)
		f.s.sending.Go(func() {
			a.out, a.err = f.s.attempt(f.ctx, c, f.leased)
			close(a.done)
			if <-a.record {
				f.s.record(f.ctx, c, a.out, a.err)
			}
		})
	}
	return f.wait
}

// wait waits up to firstAttemptWait for the running attempts and returns those that ended with an
// outcome.
func (f *firstAttempts) wait() []Attempted {
	deadline := time.NewTimer(firstAttemptWait)
	defer deadline.Stop()
	expired := false
	var ended []Attempted
	for _, a := range f.running {
		if !expired {
			select {
			case <-a.done:
			case <-deadline.C:
				expired = true
			}
		}
		select {
		case <-a.done:
			if a.err == nil {
				a.inTx = true
				ended = append(ended, Attempted{Claim: a.claim, Outcome: a.out})
			}
		default:
		}
	}
	return ended
}

// finish tells each attempt how the transaction ended. After a commit, an attempt that was not
// recorded in it records its own outcome. After a rollback nothing is recorded: the change is back
// in the queue, and matching it again sends the same event (its id derives from the change's) to the
// same endpoints.
func (f *firstAttempts) finish(committed bool) {
	for _, a := range f.running {
		a.record <- committed && !a.inTx
	}
}

// record records the outcome of a first attempt outside the matcher's transaction. An attempt that
// ended without an outcome, and a record that fails, leave the delivery leased, the same as a job
// that was not acknowledged: the work queue sends it once the lease has run out.
func (s *Service) record(ctx context.Context, c Claim, out Outcome, err error) {
	if err == nil {
		err = s.store.RecordOutcome(ctx, c, out)
	}
	if err != nil && ctx.Err() == nil {
		s.log.Warn("webhook delivery: first attempt not recorded; the work queue will send it once its lease runs out",
			"delivery_id", c.DeliveryID, "error", err)
	}
}
