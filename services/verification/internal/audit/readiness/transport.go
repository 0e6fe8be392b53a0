package readiness

import (
	"crypto/tls"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

func checkErrorContract(in Input) []Evidence {
	c := in.UnknownTool
	if !c.Probed {
		return nil
	}
	var out []string
	if c.HTTPStatus >= 500 {
		out = append(out, fmt.Sprintf("tools/call of an unknown tool answered HTTP %d", c.HTTPStatus))
	}
	switch {
	case c.NonJSON:
		out = append(out, "tools/call of an unknown tool answered a body that is not JSON")
	case !c.JSONRPCError && !c.ToolError:
		out = append(out, "tools/call of an unknown tool answered neither a JSON-RPC error nor a result with isError true")
	}
	if c.Detail != "" {
		for i := range out {
			out[i] += " (" + quote(c.Detail, 120) + ")"
		}
	}
	return capped("", out)
}

func checkLatencyInitialize(in Input) []Evidence {
	return slow("initialize", in.InitializeLatency)
}

func checkLatencyToolsList(in Input) []Evidence {
	return slow("tools/list", in.ToolsListLatency)
}

func slow(method string, samples []time.Duration) []Evidence {
	if len(samples) < MinLatencySamples {
		return nil
	}
	if p := percentile(samples, LatencyPercentile); p > LatencyBudget {
		return []Evidence{{Detail: fmt.Sprintf("%s p%d is %d ms over %d samples (budget %d ms)",
			method, LatencyPercentile, p.Milliseconds(), len(samples), LatencyBudget.Milliseconds())}}
	}
	return nil
}

// percentile is the nearest-rank p-th percentile: the sample at rank ⌈p/100 × n⌉ of the sorted
// samples; 0 without samples.
func percentile(samples []time.Duration, p int) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	rank := int(math.Ceil(float64(p) / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

func stats(samples []time.Duration) LatencyStats {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return LatencyStats{
		Samples: len(samples),
		P50MS:   ms(percentile(samples, 50)),
		P95MS:   ms(percentile(samples, LatencyPercentile)),
	}
}

func checkTLSVersion(in Input) []Evidence {
	if v := in.TLS.Version; v != 0 && v < MinTLSVersion {
		return []Evidence{{Detail: fmt.Sprintf("the server negotiated %s", tls.VersionName(v))}}
	}
	return nil
}

func checkCertificateExpiry(in Input) []Evidence {
	end := in.TLS.CertNotAfter
	if end.IsZero() {
		return nil
	}
	left := end.Sub(in.Now)
	switch {
	case left <= 0:
		return []Evidence{{Detail: fmt.Sprintf("the certificate expired on %s", end.UTC().Format(time.DateOnly))}}
	case left < CertExpiryWindow:
		return []Evidence{{Detail: fmt.Sprintf("the certificate expires on %s, in %.1f days",
			end.UTC().Format(time.DateOnly), left.Hours()/24)}}
	}
	return nil
}

func checkHTTPHygiene(in Input) []Evidence {
	h := in.Headers
	if h == nil {
		return nil
	}
	var out []Evidence
	if h.Get("Strict-Transport-Security") == "" {
		out = append(out, Evidence{Detail: "no Strict-Transport-Security header"})
	}
	if strings.TrimSpace(h.Get("Access-Control-Allow-Origin")) == "*" &&
		strings.EqualFold(strings.TrimSpace(h.Get("Access-Control-Allow-Credentials")), "true") {
		out = append(out, Evidence{Detail: "Access-Control-Allow-Origin: * together with Access-Control-Allow-Credentials: true"})
	}
	if s := h.Get("Server"); strings.ContainsAny(s, "0123456789") {
		out = append(out, Evidence{Detail: "Server header discloses a version: " + quote(s, 60)})
	}
	// These headers only ever advertise the stack, so any value leaks it.
	for _, name := range []string{"X-Powered-By", "X-AspNet-Version", "X-AspNetMvc-Version"} {
		if v := h.Get(name); v != "" {
			out = append(out, Evidence{Detail: name + " header discloses the stack: " + quote(v, 60)})
		}
	}
	return out
}

func checkProtocolVersion(in Input) []Evidence {
	v, err := time.Parse(time.DateOnly, in.ProtocolVersion)
	if err != nil {
		return nil // empty or not a dated revision: nothing to compare
	}
	floor, _ := time.Parse(time.DateOnly, MinProtocolVersion)
	if v.Before(floor) {
		return []Evidence{{Detail: fmt.Sprintf("protocol version %s is older than %s", in.ProtocolVersion, MinProtocolVersion)}}
	}
	return nil
}
