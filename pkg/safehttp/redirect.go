package safehttp

import (
	"fmt"
	"net/http"
)

// checkRedirect is the http.Client's CheckRedirect: every hop passes the same URL checks as the first
// request (scheme, host syntax, allowlist, IP literal), and the dial check then applies to its host. It
// records the chain: via holds every request made so far, in order.
func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	if c.policy.MaxRedirects == 0 {
		// Redirects are off: hand the 3xx back, and Do reports it as KindStatus with its code.
		return http.ErrUseLastResponse
	}
	if len(via) > c.policy.MaxRedirects {
		return &Error{
			Kind:   KindTooManyRedirects,
			Host:   req.URL.Hostname(),
			Reason: fmt.Sprintf("more than %d redirects", c.policy.MaxRedirects),
		}
	}
	host, err := c.checkURL(req.URL)
	if err != nil {
		return err
	}
	chain := make([]string, len(via))
	for i, r := range via {
		chain[i] = r.URL.String()
	}
	recorderFrom(req.Context()).redirected(chain, host)
	return nil
}
