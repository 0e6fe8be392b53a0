package webhooks

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"

	"github.com/trustlayer/trustlayer/pkg/safehttp"
)

// Config holds the limits and schedule of the use cases (app.WebhookSettings documents the defaults).
type Config struct {
	// MaxActiveWatches caps an organization's active watches (403 watch_limit_reached).
	MaxActiveWatches int
	// MaxEndpoints caps an organization's endpoints that are not revoked.
	MaxEndpoints int
	// Timeout caps one POST, from dial to the last byte read.
	Timeout time.Duration
	// MaxAttempts is how many POSTs a delivery gets before it is exhausted.
	MaxAttempts int
	// RetryBase is the nominal delay after the first failed attempt; each later one is 4 times longer,
	// up to RetryMax.
	RetryBase time.Duration
	RetryMax  time.Duration
	// DisableAfter disables an endpoint after this many deliveries in a row exhausted their attempts.
	DisableAfter int
	// Workers bounds the POSTs in flight in one replica: first attempts sent by the matcher and the
	// work queue's jobs together.
	Workers int
	// RequeueAfter is how long an enqueued job may go unanswered before the scheduler enqueues it again
	// (a job lost with a crashed NATS server, say). Duplicates are harmless: Store.ClaimDelivery skips them.
	RequeueAfter time.Duration
	// AllowPrivate lists the private networks endpoints may live in (ALLOW_PRIVATE_CIDRS).
	AllowPrivate []netip.Prefix
}

// Service runs the watch, endpoint and delivery use cases.
type Service struct {
	store   Store
	servers ServerCatalog
	cfg     Config
	client  *safehttp.Client
	log     *slog.Logger
	now     func() time.Time
	jitter  func() float64
	// slots bounds the POSTs in flight (Config.Workers); sending tracks the first attempts that the
	// matcher started.
	slots   slots
	sending sync.WaitGroup
	// wake holds at most one wake-up of the matchers (Wake).
	wake chan struct{}
}

// slots is a counting semaphore.
type slots chan struct{}

// acquire takes a slot, waiting for one; false when ctx ended first.
func (s slots) acquire(ctx context.Context) bool {
	select {
	case s <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s slots) release() { <-s }

// Option configures a Service.
type Option func(*Service)

// WithLogger sets where the loops log.
func WithLogger(l *slog.Logger) Option { return func(s *Service) { s.log = l } }

// NewService returns the use cases over store.
func NewService(store Store, servers ServerCatalog, cfg Config, opts ...Option) *Service {
	s := &Service{
		store: store, servers: servers, cfg: cfg, client: newClient(cfg),
		log: slog.Default(), now: time.Now, jitter: rand.Float64, slots: make(slots, max(cfg.Workers, 1)),
		wake: make(chan struct{}, 1),
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// excerptLimit caps the stored response excerpt (1 KiB); readLimit is what a worker reads of a 2xx
// body so that the connection can go back to the pool, and is the client's body cap.
const (
	excerptLimit = 1 << 10
	readLimit    = 64 << 10
)

// newClient returns the SSRF-safe client of the workers: one attempt per call, because retries are the
// delivery schedule's (kept in PostgreSQL), and no redirects, because a 30x to a POST would turn it
// into a GET and a receiver that moved must be re-registered. It keeps as many idle connections to a
// receiver as POSTs may be in flight to it, so that a change's deliveries reuse them.
func newClient(cfg Config) *safehttp.Client {
	return safehttp.New(safehttp.Policy{
		AllowPrivate: cfg.AllowPrivate,
		Timeout:      cfg.Timeout,
		MaxAttempts:  1,
		MaxRedirects: -1,
		MaxBytes:     readLimit,
	}, safehttp.WithIdleConnsPerHost(cfg.Workers))
}
