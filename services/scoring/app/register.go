package app

import (
	"context"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/trustlayer/trustlayer/pkg/apidoc"
	"github.com/trustlayer/trustlayer/pkg/buildinfo"
	"github.com/trustlayer/trustlayer/pkg/periodic"
	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/pkg/serve"
	scoringv1 "github.com/trustlayer/trustlayer/proto/scoring/v1"
	"github.com/trustlayer/trustlayer/services/scoring/internal/api"
	"github.com/trustlayer/trustlayer/services/scoring/internal/billing"
	"github.com/trustlayer/trustlayer/services/scoring/internal/decision"
	"github.com/trustlayer/trustlayer/services/scoring/internal/events"
	"github.com/trustlayer/trustlayer/services/scoring/internal/feedback"
	"github.com/trustlayer/trustlayer/services/scoring/internal/meter"
	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
	"github.com/trustlayer/trustlayer/services/scoring/internal/policysignal"
	"github.com/trustlayer/trustlayer/services/scoring/internal/score"
	"github.com/trustlayer/trustlayer/services/scoring/internal/store"
	webbilling "github.com/trustlayer/trustlayer/services/scoring/internal/web/billing"
	webmcp "github.com/trustlayer/trustlayer/services/scoring/internal/web/mcp"
	webmodels "github.com/trustlayer/trustlayer/services/scoring/internal/web/models"
	"github.com/trustlayer/trustlayer/services/scoring/internal/web/ops"
)

// register adds the service's APIs and loops to an opened platform.
func register(ctx context.Context, cfg Config, p *platform.Platform) error {
	// GET /health is the minimal availability route beside the shared probes (README "Operations").
	p.Server.Handle("GET /health", p.Server.LivenessHandler())

	st := store.New(p.Pool)
	// The authentication interceptor, built when the platform opened, made the key service (credentials).
	creds := cfg.creds.keys
	models, err := model.Load()
	if err != nil {
		return err
	}
	index := policysignal.NewIndex()
	if err := index.Reload(ctx, st); err != nil {
		return err
	}
	signals := policysignal.NewService(st, index)
	engine := decision.New(models, index, decision.Config{DenialThresholdOverride: cfg.Settings.DenialThresholdOverride,
		DefaultVersions: defaultVersions(cfg.Settings)})
	upgradeURL := strings.TrimRight(cfg.Settings.PublicURL, "/") + "/v1/billing/checkout-session"
	m := meter.New(st, meter.WithFlushInterval(cfg.Settings.UsageFlushInterval), meter.WithLogger(p.Log), meter.WithUpgradeURL(upgradeURL))
	p.Go(m.Run)
	// The flush loop ends with the servers' context, while requests may still be draining: this last
	// flush runs after the servers stopped and before the pool closes, so no call goes unmetered.
	p.OnClose(func() {
		flushCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Flush(flushCtx); err != nil {
			p.Log.Error("final usage flush failed", "error", err)
		}
	})
	var limiter score.Limiter = m
	if cfg.limiter != nil {
		limiter = cfg.limiter(m)
	}
	// Billing without Stripe settings still reports account status; checkout and the webhook answer 503.
	var processor billing.Processor
	if sc := stripeConfig(cfg.Settings, p.Log); sc.Configured() {
		processor = billing.NewStripe(sc)
	}
	bill := billing.New(st, processor, creds, p.Log)

	registrations := []struct {
		desc *grpc.ServiceDesc
		impl any
		gw   serve.GatewayRegistrar
	}{
		{&scoringv1.KeyService_ServiceDesc, api.NewKeys(creds, api.TrialLimits{Store: st, PerAddress: cfg.Settings.TrialKeysPerAddress,
			PerHour: cfg.Settings.TrialKeysPerHour, ProxyHops: cfg.Settings.TrustedProxyHops}), serve.Gateway(scoringv1.RegisterKeyServiceHandlerClient, scoringv1.NewKeyServiceClient)},
		{&scoringv1.UsageService_ServiceDesc, api.NewUsage(m), serve.Gateway(scoringv1.RegisterUsageServiceHandlerClient, scoringv1.NewUsageServiceClient)},
		{&scoringv1.FeedbackService_ServiceDesc, api.NewFeedback(feedback.New(st, m)), serve.Gateway(scoringv1.RegisterFeedbackServiceHandlerClient, scoringv1.NewFeedbackServiceClient)},
		{&scoringv1.AppealService_ServiceDesc, api.Appeals{}, serve.Gateway(scoringv1.RegisterAppealServiceHandlerClient, scoringv1.NewAppealServiceClient)},
		{&scoringv1.PolicySignalService_ServiceDesc, api.NewSignals(signals), serve.Gateway(scoringv1.RegisterPolicySignalServiceHandlerClient, scoringv1.NewPolicySignalServiceClient)},
		{&scoringv1.ControlPlaneService_ServiceDesc, api.NewControlPlane(cfg.creds.workspaces, cfg.Settings.TrustedProxyHops), serve.Gateway(scoringv1.RegisterControlPlaneServiceHandlerClient, scoringv1.NewControlPlaneServiceClient)},
		{&scoringv1.BillingService_ServiceDesc, api.NewBilling(bill), serve.Gateway(scoringv1.RegisterBillingServiceHandlerClient, scoringv1.NewBillingServiceClient)},
		// Last: the gateway tries the patterns of a method newest first, and each pattern that does not
		// match costs a match attempt and an errors.As by reflection. Registered first, POST /v1/score
		// was tried after every other POST route of the service (2.5 % of the service's CPU under the
		// scoring load in errors.As alone).
		{&scoringv1.ScoringService_ServiceDesc, api.NewScoring(score.New(engine, limiter, p.Log), models), serve.Gateway(scoringv1.RegisterScoringServiceHandlerClient, scoringv1.NewScoringServiceClient)},
	}
	for _, r := range registrations {
		if err := p.Server.Register(r.desc, r.impl, r.gw); err != nil {
			return err
		}
	}

	p.Server.Handle("GET /v1/models/reliability/{name}", webmodels.ReliabilityDiagrams(models))
	// The OAuth authorization server of agent clients: its grants act as the signed-in user's
	// workspace agent key (control plane AgentKey). Spent and expired grants are purged hourly.
	cfg.creds.oauth.Mount(p.Server, cfg.creds.workspaces)
	p.Go(func(ctx context.Context) error { return periodic.Run(ctx, time.Hour, cfg.creds.oauth.PurgeExpired) })
	// The MCP agent endpoint scores through the in-process connection, so a tool call passes the same
	// interceptors, limiter, meter and decision log as POST /v1/score; it accepts what the interceptor
	// accepts (keys, legacy JWTs, OAuth access tokens).
	agent, err := webmcp.New(webmcp.Config{PublicURL: cfg.Settings.PublicURL, Version: buildinfo.Get(Name).Version,
		Auth: cfg.creds.oauth.Authenticator(), Conn: p.Server.InProcess(), Log: p.Log})
	if err != nil {
		return err
	}
	agent.Register(p.Server.Handle)
	// The processor's webhook needs the raw body for its signature: a plain handler, public.
	p.Server.Handle("POST /v1/billing/webhook", webbilling.Webhook(bill, p.Log))
	p.Server.Handle("GET /v1/billing/checkout/return", webbilling.CheckoutReturn())
	// The 402's upgrade_url opened as a link (README "Billing").
	p.Server.Handle("GET /v1/billing/checkout-session", webbilling.CheckoutPage(bill, cfg.creds.oauth.Authenticator()))
	// Operations routes (internal/web/ops): Prometheus text to private-network callers, the JSON
	// snapshot to keys with metrics:read, and the API description built once from the protos.
	apiDoc, err := ops.Document(cfg.Settings.PublicURL)
	if err != nil {
		return err
	}
	p.Server.Handle("GET /metrics", ops.PrivateOnly(cfg.Settings.TrustedProxyHops, p.Metrics.Handler()))
	p.Server.Handle("GET /metrics.json", &ops.Snapshot{Service: Name, Started: time.Now(), Metrics: p.Metrics.Gatherer(),
		Usage: st, Keys: creds, Log: p.Log, FlushInterval: cfg.Settings.UsageFlushInterval})
	p.Server.Handle("GET /openapi.json", apidoc.Handler(apiDoc))

	p.Go(events.PolicyChanges(p.Bus, signals, p.Log).Run)
	p.Go(func(ctx context.Context) error {
		return periodic.Run(ctx, cfg.Settings.SignalRefreshInterval, func(ctx context.Context) {
			if err := index.Reload(ctx, st); err != nil {
				p.Log.Warn("policy signal index reload failed", "error", err)
			}
		})
	})
	return nil
}
