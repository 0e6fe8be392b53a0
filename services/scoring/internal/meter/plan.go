package meter

// Plan is the metering side of a billing plan: what a key may call and how fast. Plans are data so
// that billing can change them without touching the meter.
type Plan struct {
	// Name is the plan's name as accounts.plan stores it: trial, paid, commit or internal.
	Name string
	// IncludedCalls is the number of scoring calls per calendar month (UTC) the plan includes.
	IncludedCalls int64
	// HardQuota stops the key at IncludedCalls (402 for the caller); without it calls beyond
	// IncludedCalls are billed as overage.
	HardQuota bool
	// RatePerSecond is the sustained request rate of one key; Burst is how many requests it may send
	// at once after a quiet moment. One scoring request takes one token, a batch too.
	RatePerSecond float64
	Burst         int
	// MaxInFlight bounds the scoring requests of one key running at the same time on one replica.
	MaxInFlight int
}

// The limits of README "Keys, limits and metering": trial is 1,000 calls a month as a hard quota, 1 request per
// second with a burst of 5, one request in flight. Paid plans are usage-based after the same 1,000
// included calls; their rates are ours to choose: paid is sized for a
// claims system scoring as it ingests, commit for a batch back-office, internal for our own tools.
var plans = map[string]Plan{
	"trial":    {Name: "trial", IncludedCalls: 1_000, HardQuota: true, RatePerSecond: 1, Burst: 5, MaxInFlight: 1},
	"paid":     {Name: "paid", IncludedCalls: 1_000, RatePerSecond: 50, Burst: 100, MaxInFlight: 16},
	"commit":   {Name: "commit", IncludedCalls: 1_000, RatePerSecond: 200, Burst: 400, MaxInFlight: 64},
	"internal": {Name: "internal", RatePerSecond: 1_000, Burst: 2_000, MaxInFlight: 256},
}

// PlanFor returns the plan with this name (trial, paid, commit or internal) and whether it exists.
func PlanFor(name string) (Plan, bool) {
	p, ok := plans[name]
	return p, ok
}
