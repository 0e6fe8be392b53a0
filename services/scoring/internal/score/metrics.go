package score

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
)

// decisionMetrics counts scoring decisions by route id (README "Telemetry route ids"), workflow
// and risk level. The attribute sets are built once: a request only picks one.
type decisionMetrics struct {
	decisions metric.Int64Counter
	sets      map[[3]string]metric.AddOption
}

var (
	routeIDs   = []string{RouteUnified, RouteBatch, RouteDenial, RoutePriorAuth, RouteReimbursement}
	riskLevels = []string{"high", "medium", "low"}
)

func newDecisionMetrics() decisionMetrics {
	counter, _ := otel.Meter("github.com/trustlayer/trustlayer/services/scoring").Int64Counter("scoring.decisions",
		metric.WithDescription("Scoring decisions (billable scoring calls) by route id, workflow and risk level"),
		metric.WithUnit("{decision}"))
	m := decisionMetrics{decisions: counter, sets: map[[3]string]metric.AddOption{}}
	for _, r := range routeIDs {
		for _, w := range claim.Workflows {
			for _, l := range riskLevels {
				m.sets[[3]string{r, string(w), l}] = metric.WithAttributeSet(attribute.NewSet(
					attribute.String("route_id", r), attribute.String("workflow", string(w)), attribute.String("risk_level", l)))
			}
		}
	}
	return m
}

func (m decisionMetrics) add(ctx context.Context, route string, w claim.Workflow, risk string) {
	if opt, ok := m.sets[[3]string{route, string(w), risk}]; ok {
		m.decisions.Add(ctx, 1, opt)
	}
}
