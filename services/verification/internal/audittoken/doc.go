// Package audittoken issues and verifies the bearer tokens of the verification service's audit
// routes (POST /v1/audits/mcp, POST /v1/audits/readiness, GET /v1/audits/{id}).
//
// The tokens are JWTs signed with an asymmetric key (Ed25519, or ECDSA P-256 where a key store only
// offers NIST curves). Only the Issuer holds the private key; whatever verifies a token needs just the
// public key, which the service publishes as a JWK Set at /.well-known/jwks.json. A replica, a proxy
// or a customer's gateway can therefore check a token without ever holding a secret that could mint
// one, which an HMAC key would require.
//
// Every token names its key in the "kid" header: the RFC 7638 thumbprint of the public key, so the
// id follows from the key alone and replicas sharing a key agree on it without configuration. The kid
// is what makes rotation possible: a verifier holding several keys (an identity provider's JWKS, or
// a third party caching ours across a key change) picks the one a token names instead of trying them
// all, and a token of a retired key fails on its kid before any signature is checked. The service
// itself signs with, publishes and accepts one key at a time; replacing it invalidates the tokens of
// the old key, which are short-lived.
//
// A Verifier may also accept the tokens of one external issuer (an operator's identity provider),
// whose keys it fetches from a JWKS URL and refreshes in the background. Tokens are routed by their
// "iss" claim, and each issuer is verified only with its own keys and algorithms, so a token signed
// by one issuer can never pass as another's.
//
// Verify answers every failure — malformed, expired, wrong audience, unknown key, bad signature —
// with the one error ErrInvalid, and route handlers answer all of them with the same 401. A client
// learns nothing it could use to probe which check it fails; the cause stays wrapped inside the error
// for the service's own logs.
package audittoken
