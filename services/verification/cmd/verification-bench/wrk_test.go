package main

import (
	"os"
	"strings"
	"testing"
)

func TestParseWrk(t *testing.T) {
	t.Parallel()
	// wrk 4.1's summary, as it prints it.
	clean := `Running 8s test @ http://127.0.0.1:8081
  2 threads and 16 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.23ms  456.00us  10.00ms   80.00%
    Req/Sec     6.50k   500.00     7.00k    70.00%
  103456 requests in 8.00s, 50.00MB read
Requests/sec:  12932.05
Transfer/sec:      6.25MB
`
	for _, tc := range []struct {
		name string
		out  string
		want wrkResult
	}{
		{"clean", clean, wrkResult{RPS: 12932.05}},
		{"non-2xx", strings.Replace(clean, "Requests/sec", "  Non-2xx or 3xx responses: 3\nRequests/sec", 1), wrkResult{RPS: 12932.05, Errors: 3}},
		{"socket errors", strings.Replace(clean, "Requests/sec", "  Socket errors: connect 1, read 2, write 0, timeout 4\nRequests/sec", 1), wrkResult{RPS: 12932.05, Errors: 7}},
	} {
		got, err := parseWrk([]byte(tc.out))
		if err != nil || got != tc.want {
			t.Errorf("%s: got %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
	if _, err := parseWrk([]byte("unable to connect to 127.0.0.1:8081 Connection refused\n")); err == nil {
		t.Error("got no error for an output without a Requests/sec line")
	}
}

func TestWrkScriptRotatesPathsAndKeys(t *testing.T) {
	t.Parallel()
	path, err := wrkScript(t.TempDir(), []string{"/v1/intelligence/servers/io.github.a/b"}, []string{"vk_1", "vk_2"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"/v1/intelligence/servers/io.github.a/b"`, `"Bearer vk_1"`, `"Bearer vk_2"`, "request = function()"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("script lacks %s:\n%s", want, b)
		}
	}
}
