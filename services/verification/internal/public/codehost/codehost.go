// Package codehost is the code host's OAuth sign-in (authorization-code flow, RFC 6749 section 4.1)
// as the claim of an io.github.<user> namespace uses it: the browser signs in at the code host, which
// sends it back with a code; the service exchanges the code for an access token and reads the
// account name it was issued to. The base URLs are settings, so that a staging deployment or a test
// points them at a fake.
package codehost

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	apphost "github.com/trustlayer/trustlayer/services/verification/internal/codehost"
)

// Config names the code host and this service's OAuth application.
type Config struct {
	// BaseURL serves /login/oauth/authorize and /login/oauth/access_token (https://github.com).
	BaseURL string
	// APIURL serves GET /user (https://api.github.com).
	APIURL       string
	ClientID     string
	ClientSecret string
	// CallbackURL is this service's GET /claim/callback, as registered with the application.
	CallbackURL string
}

// Client signs in through the code host.
type Client struct {
	cfg  Config
	http *http.Client
}

// New returns a client; its requests time out after 10 seconds and follow no redirect.
func New(cfg Config) *Client {
	return &Client{cfg: cfg, http: apphost.HTTPClient(10 * time.Second)}
}

// AuthorizeURL is where the browser signs in; the code host sends it back to CallbackURL with state.
// No scope is asked for: the account name needs none.
func (c *Client) AuthorizeURL(state string) string {
	q := url.Values{"client_id": {c.cfg.ClientID}, "redirect_uri": {c.cfg.CallbackURL}, "state": {state}, "allow_signup": {"false"}}
	return strings.TrimRight(c.cfg.BaseURL, "/") + "/login/oauth/authorize?" + q.Encode()
}

// Login exchanges code for an access token and returns the account name it belongs to.
func (c *Client) Login(ctx context.Context, code string) (string, error) {
	form := url.Values{"client_id": {c.cfg.ClientID}, "client_secret": {c.cfg.ClientSecret}, "code": {code}, "redirect_uri": {c.cfg.CallbackURL}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.cfg.BaseURL, "/")+"/login/oauth/access_token", strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	var tok struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
	}
	if err := c.do(req, &tok); err != nil {
		return "", err
	}
	if tok.AccessToken == "" {
		return "", fmt.Errorf("code host refused the code: %q", tok.Error)
	}
	req, err = http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.cfg.APIURL, "/")+"/user", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	req.Header.Set("Accept", "application/vnd.github+json")
	var user struct {
		Login string `json:"login"`
	}
	if err := c.do(req, &user); err != nil {
		return "", err
	}
	if user.Login == "" {
		return "", errors.New("code host answered no account name")
	}
	return user.Login, nil
}

// do sends req and decodes a 200 JSON answer of at most 64 KiB into v.
func (c *Client) do(req *http.Request, v any) error {
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("code host answered %d", resp.StatusCode)
	}
	return apphost.DecodeJSON(resp.Body, 64<<10, v)
}
