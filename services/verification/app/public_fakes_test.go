package app_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// publicFakeDNS is a loopback DNS server (UDP) answering A and TXT questions from its tables; any other
// name is NXDOMAIN.
type publicFakeDNS struct {
	addr string
	mu   sync.Mutex
	a    map[string]netip.Addr
	txt  map[string][]string
}

func newPublicFakeDNS(t testing.TB) *publicFakeDNS {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &publicFakeDNS{addr: pc.LocalAddr().String(), a: map[string]netip.Addr{}, txt: map[string][]string{}}
	t.Cleanup(func() { _ = pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if out := d.answer(buf[:n]); out != nil {
				_, _ = pc.WriteTo(out, from)
			}
		}
	}()
	return d
}

func (d *publicFakeDNS) setA(name string, addr netip.Addr) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.a[strings.ToLower(name)+"."] = addr
}

func (d *publicFakeDNS) setTXT(name string, values ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.txt[strings.ToLower(name)+"."] = values
}

func (d *publicFakeDNS) answer(req []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(req)
	if err != nil {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	name := strings.ToLower(q.Name.String())
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
	b.EnableCompression()
	_, knownA := d.a[name]
	_, knownTXT := d.txt[name]
	if !knownA && !knownTXT {
		b = dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RCode: dnsmessage.RCodeNameError})
	}
	_ = b.StartQuestions()
	_ = b.Question(q)
	_ = b.StartAnswers()
	rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 1}
	switch q.Type {
	case dnsmessage.TypeA:
		if a, ok := d.a[name]; ok && a.Is4() {
			_ = b.AResource(rh, dnsmessage.AResource{A: a.As4()})
		}
	case dnsmessage.TypeTXT:
		for _, v := range d.txt[name] {
			_ = b.TXTResource(rh, dnsmessage.TXTResource{TXT: []string{v}})
		}
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}

// publicFakeCodeHost is a loopback OAuth code host: its authorize page sends the browser back at once
// with a code for login; it exchanges that code for a token and names login at /user.
type publicFakeCodeHost struct {
	*httptest.Server
	mu    sync.Mutex
	login string
	codes map[string]string
}

func newPublicFakeCodeHost(t testing.TB, login string) *publicFakeCodeHost {
	f := &publicFakeCodeHost{login: login, codes: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login/oauth/authorize", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		code := "code-" + time.Now().Format("150405.000000000")
		f.codes[code] = f.login
		f.mu.Unlock()
		q := r.URL.Query()
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+q.Get("state"), http.StatusFound)
	})
	mux.HandleFunc("POST /login/oauth/access_token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		f.mu.Lock()
		login, ok := f.codes[r.PostForm.Get("code")]
		delete(f.codes, r.PostForm.Get("code"))
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if !ok || r.PostForm.Get("client_secret") != "test-secret" {
			_, _ = w.Write([]byte(`{"error":"bad_verification_code"}`))
			return
		}
		_, _ = w.Write([]byte(`{"access_token":"tok-` + login + `","token_type":"bearer"}`))
	})
	mux.HandleFunc("GET /user", func(w http.ResponseWriter, r *http.Request) {
		login, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer tok-")
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"login":"` + login + `"}`))
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}
