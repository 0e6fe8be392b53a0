// Package safehttp is the one HTTP client every service uses to fetch a URL that a user supplied: policy
// documents (ingestion), MCP audit targets and webhook endpoints (verification). It exists so that a
// user cannot make a service reach its own network (server-side request forgery).
//
// What it guarantees, per request and per redirect hop:
//
//   - The URL is http or https (https only under Policy.RequireHTTPS), carries no credentials, and its
//     host is a valid DNS hostname or a canonical IP literal; numeric forms that some resolvers read as
//     addresses ("2130706433", "0x7f.1", "0177.0.0.1") are refused before any lookup.
//   - The host is on Policy.AllowedHosts when that list is set.
//   - The service resolves the name itself, checks every address the resolver returns, and dials the
//     checked address literal, so the address checked is the address connected (DNS rebinding cannot
//     swap it between check and dial). A socket control hook checks the connected address once more.
//   - Loopback, private, link-local, CGNAT, multicast, reserved, documentation, unspecified and cloud
//     metadata addresses, with their IPv6, IPv4-mapped, NAT64 and 6to4 forms, are refused unless an
//     operator listed them in Policy.AllowPrivate (never: metadata and unspecified addresses, and
//     NAT64 or 6to4 forms of reserved IPv4 addresses).
//   - No proxy from the environment is used: a proxy would make the dial check meaningless.
//   - The body is capped at Policy.MaxBytes while it streams, each attempt at Policy.Timeout, the
//     redirect chain at Policy.MaxRedirects and retries at Policy.MaxAttempts.
//   - With Policy.AllowedMIME set, the declared media type must be allowed and agree with the type
//     sniffed from the first 512 bytes.
//
// Errors are *Error values with a Kind; Permanent tells whether a retry could help. Error texts name
// the host, never the full URL (paths and queries carry webhook secrets) nor any response body.
package safehttp
