package webhooks

import "time"

// retryFactor multiplies the nominal delay after each failed attempt. With the defaults (30 s base,
// 4 h cap, 10 attempts) the nominal schedule is 30 s, 2 m, 8 m, 32 m, 2 h 8 m, then 4 h four times:
// about 18 h 45 m from the first attempt to the last, which rides out a receiver's overnight outage.
const retryFactor = 4

// retryDelay is the wait after failed attempt n (from 1): the nominal delay base·4^(n-1), capped at
// max, drawn uniformly from its upper half ("equal jitter"), so that deliveries that failed together
// do not all come back at once yet none comes back much sooner than planned. A Retry-After the
// receiver asked for is honoured up to max. jitter returns a number in [0, 1).
func retryDelay(n int, base, max, retryAfter time.Duration, jitter float64) time.Duration {
	d := base
	for i := 1; i < n && d < max; i++ {
		d *= retryFactor
	}
	d = min(d, max)
	d = d/2 + time.Duration(jitter*float64(d/2))
	if retryAfter > d {
		d = min(retryAfter, max)
	}
	return d
}
