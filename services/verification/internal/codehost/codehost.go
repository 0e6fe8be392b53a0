// Package codehost reads a code host's App API the way GitHub's works: the app authenticates with
// a short JWT signed by its private key (RS256), reads one of its installations
// (GET /app/installations/{id}), mints an installation token (POST
// /app/installations/{id}/access_tokens), and lists the installation's repositories with it
// (GET /installation/repositories). Only the app's own installations are visible to it, which is
// what makes an installation id from a callback worth believing.
package codehost

import (
	"bytes"
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Bounds of the client.
const (
	// PerPage is the page size of the repository listing (the API's largest).
	PerPage = 100
	// MaxRepositories caps what one listing reads: 10 pages.
	MaxRepositories = 1000
	// maxBody caps an answer's body; a page of 100 repositories is about 600 KiB on GitHub.
	maxBody = 4 << 20
	// DefaultTimeout bounds each request.
	DefaultTimeout = 10 * time.Second
)

// Errors of the client. Every other failure (transport, 5xx, 401, a body that does not decode)
// is ErrUnavailable, with the cause for logs only.
var (
	// ErrNotFound: the app has no installation of this id (404).
	ErrNotFound = errors.New("code host: installation not found")
	// ErrUnavailable: the API could not be read.
	ErrUnavailable = errors.New("code host: API unavailable")
)

// Config is the app's identity on the code host.
type Config struct {
	// APIURL is the API's base URL (https://api.github.com for GitHub).
	APIURL string
	// AppID is the app's id, the JWT's issuer.
	AppID string
	// PrivateKey signs the app's JWTs.
	PrivateKey *rsa.PrivateKey
	// HTTPClient makes the requests; nil is HTTPClient(DefaultTimeout).
	HTTPClient *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Client reads installations.
type Client struct {
	base *url.URL
	cfg  Config
}

// New returns a client; the URL must be absolute http(s).
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(cfg.APIURL, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("code host API URL %q: want an absolute http(s) URL", cfg.APIURL)
	}
	if cfg.PrivateKey == nil || cfg.AppID == "" {
		return nil, errors.New("code host: app id and private key are required")
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = HTTPClient(DefaultTimeout)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Client{base: u, cfg: cfg}, nil
}

// Installation is an installation of the app.
type Installation struct {
	ID           int64
	AccountLogin string
	Suspended    bool
}

// Repository is a repository an installation can access.
type Repository struct {
	ID            int64
	FullName      string
	DefaultBranch string
	Description   string
}

// appJWT is the app's credential: issued a minute in the past against clock drift, valid nine
// minutes (GitHub refuses more than ten).
func (c *Client) appJWT() (string, error) {
	now := c.cfg.Now()
	return jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.RegisteredClaims{
		Issuer:    c.cfg.AppID,
		IssuedAt:  jwt.NewNumericDate(now.Add(-time.Minute)),
		ExpiresAt: jwt.NewNumericDate(now.Add(9 * time.Minute)),
	}).SignedString(c.cfg.PrivateKey)
}

// do sends a request with a bearer credential and decodes a JSON answer of status want into v.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, credential string, want int, v any) error {
	u := *c.base
	u.Path += path
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), http.NoBody)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("Authorization", "Bearer "+credential)
	req.Header.Set("User-Agent", "verification-agent-reliability")
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// The transport's error names the API's address and resolved IPs: only its kind is kept.
		kind := "transport failure"
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			kind = "timed out"
		}
		return fmt.Errorf("%w: %s %s: %s", ErrUnavailable, method, path, kind)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return ErrNotFound
	case resp.StatusCode != want:
		return fmt.Errorf("%w: %s %s: status %d", ErrUnavailable, method, path, resp.StatusCode)
	}
	if err := DecodeJSON(resp.Body, maxBody, v); err != nil {
		return fmt.Errorf("%w: %s %s: %v", ErrUnavailable, method, path, err)
	}
	return nil
}

// HTTPClient is a client of the code host: its requests time out after timeout, and it follows no
// redirect (the code host answers its calls directly; a redirect is a misconfiguration).
func HTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
}

// DecodeJSON decodes a JSON answer of at most limit bytes from r into v; a longer answer, or one cut
// short, is an error.
func DecodeJSON(r io.Reader, limit int, v any) error {
	body, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	switch {
	case err != nil:
		return errors.New("the answer was cut short")
	case len(body) > limit:
		return fmt.Errorf("answer over %d bytes", limit)
	}
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(v); err != nil {
		return fmt.Errorf("decoding: %v", err)
	}
	return nil
}

// Installation reads an installation of the app; ErrNotFound when the app has none of this id.
func (c *Client) Installation(ctx context.Context, id int64) (Installation, error) {
	token, err := c.appJWT()
	if err != nil {
		return Installation{}, err
	}
	var v struct {
		ID      int64 `json:"id"`
		Account struct {
			Login string `json:"login"`
		} `json:"account"`
		SuspendedAt *string `json:"suspended_at"`
	}
	if err := c.do(ctx, http.MethodGet, "/app/installations/"+strconv.FormatInt(id, 10), nil, token, http.StatusOK, &v); err != nil {
		return Installation{}, err
	}
	if v.ID != id {
		return Installation{}, fmt.Errorf("%w: installation %d answered as %d", ErrUnavailable, id, v.ID)
	}
	return Installation{ID: v.ID, AccountLogin: v.Account.Login, Suspended: v.SuspendedAt != nil}, nil
}

// Repositories lists the repositories an installation can access, at most MaxRepositories.
func (c *Client) Repositories(ctx context.Context, id int64) ([]Repository, error) {
	appToken, err := c.appJWT()
	if err != nil {
		return nil, err
	}
	var tok struct {
		Token string `json:"token"`
	}
	if err := c.do(ctx, http.MethodPost, "/app/installations/"+strconv.FormatInt(id, 10)+"/access_tokens", nil, appToken, http.StatusCreated, &tok); err != nil {
		return nil, err
	}
	if tok.Token == "" {
		return nil, fmt.Errorf("%w: an empty installation token", ErrUnavailable)
	}
	var out []Repository
	for page := 1; len(out) < MaxRepositories; page++ {
		var v struct {
			TotalCount   int `json:"total_count"`
			Repositories []struct {
				ID            int64  `json:"id"`
				FullName      string `json:"full_name"`
				DefaultBranch string `json:"default_branch"`
				Description   string `json:"description"`
			} `json:"repositories"`
		}
		q := url.Values{"per_page": {strconv.Itoa(PerPage)}, "page": {strconv.Itoa(page)}}
		if err := c.do(ctx, http.MethodGet, "/installation/repositories", q, tok.Token, http.StatusOK, &v); err != nil {
			if errors.Is(err, ErrNotFound) {
				return nil, fmt.Errorf("%w: the repository listing answered 404", ErrUnavailable)
			}
			return nil, err
		}
		for _, r := range v.Repositories {
			out = append(out, Repository{ID: r.ID, FullName: r.FullName, DefaultBranch: r.DefaultBranch, Description: r.Description})
		}
		if len(v.Repositories) < PerPage || len(out) >= v.TotalCount {
			break
		}
	}
	if len(out) > MaxRepositories {
		out = out[:MaxRepositories]
	}
	return out, nil
}
