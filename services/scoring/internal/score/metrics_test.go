package score

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
)

func TestDecisionMetricsCarryRouteIDs(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	prev := otel.GetMeterProvider()
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	t.Cleanup(func() { otel.SetMeterProvider(prev) })

	m := newDecisionMetrics()
	m.add(context.Background(), RouteDenial, claim.Denial, "high")
	m.add(context.Background(), RouteDenial, claim.Denial, "high")
	m.add(context.Background(), RouteUnified, claim.PriorAuth, "low")

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if mt.Name != "scoring.decisions" {
				continue
			}
			for _, dp := range mt.Data.(metricdata.Sum[int64]).DataPoints {
				route, _ := dp.Attributes.Value(attribute.Key("route_id"))
				wf, _ := dp.Attributes.Value(attribute.Key("workflow"))
				got[route.AsString()+" "+wf.AsString()] += dp.Value
			}
		}
	}
	want := map[string]int64{"denial_score healthcare.denial": 2, "unified_score healthcare.prior_auth": 1}
	if len(got) != len(want) || got["denial_score healthcare.denial"] != 2 || got["unified_score healthcare.prior_auth"] != 1 {
		t.Fatalf("decisions by route: got %v, want %v", got, want)
	}
}
