// Package audittest builds the MCP servers that the audit engine's tests audit, each served over
// TLS on 127.0.0.1 with a leaf of a throwaway CA (NewCA, CA.Serve), because the engine speaks
// HTTPS only and trusts only the roots it is given (or SSL_CERT_FILE, see CA.WriteCertFile).
//
// The fixtures:
//
//   - Correct and Full: the official Go SDK (v1.8.0), 2025-11-25 with Mcp-Session-Id, tools only (Full:
//     prompts, a resource and a template as well). Each passes every check and scores 100.
//   - Stateless (2026-07-28 only), Dual (both revisions) and the raw 2025 server behind every
//     defect: hand-written, so that one switch makes one defect.
//   - Protected: Correct behind bearer auth, with RFC 9728 and RFC 8414 metadata.
//   - Defects: one fixture per defect, with the check (and readiness rule) that must catch it.
//   - StreamForever, Huge, Slow and Down: servers that try the auditor's limits.
//
// What SDK v1.8.0's StreamableHTTPHandler does on its own, and what these fixtures add (see
// sdkFront, site and TestBareSDK):
//
//   - It does not validate Origin: a request with Origin: https://evil.example is served. Its
//     deprecated CrossOriginProtection option (or http.CrossOriginProtection around it) answers
//     403, but only to unsafe methods (POST, DELETE), not to GET. Its automatic DNS-rebinding
//     guard checks Host, not Origin: a request reaching a loopback address with a non-loopback
//     Host gets 403. site answers 403 to a foreign Origin on every method.
//   - Its Mcp-Session-Id values are crypto/rand.Text: 26 base32 characters, visible ASCII.
//   - After the handshake, a request without Mcp-Session-Id opens a fresh MCP connection and is answered
//     200 with a JSON-RPC error of code 0; front answers 400.
//   - Malformed JSON, a batch and an unknown method are answered 400 text/plain; front answers
//     -32700, -32600 and -32601 (with the request's id).
//   - prompts/list, resources/list and logging/setLevel are served whatever capabilities are
//     declared; front answers -32601 for a capability the server does not declare.
//   - An unknown Mcp-Session-Id 404, DELETE 204 (then 404), GET as an event stream, a 2026-07-28 request
//     refused 400 with -32022 listing the handshake versions: kept as they are.
//
// Nothing here calls out of the machine. The fixtures learn their own origin from the request's
// Host, since the port is known only once the listener starts.
package audittest
