package api

import "github.com/trustlayer/trustlayer/pkg/apidoc"

// publicAnswers are the statuses this area's methods answer besides success (they take no
// credential, so no 401).
var publicAnswers = map[string]map[string]string{
	publicPrefix + "GetCoverageSummary": {"503": "service_unavailable: the database cannot be reached"},
	publicPrefix + "RecordAnalyticsEvent": {
		"422": "An unknown name, a page that is no path, too many or too long properties, nested values, or a value that looks like personal data (type personal_data)",
		"429": "contact_rate_limited (with retry_after_seconds and Retry-After): too many events from this address, or from all, this minute",
	},
	publicPrefix + "RecordClaimIntent": {
		"404": "server_not_found: no registry lists the server",
		"422": "No server, a server name that is not namespace/name with an io.github.<user> or reverse-DNS namespace, or a bad source or intent",
		"429": "contact_rate_limited (with retry_after_seconds and Retry-After): too many intents from this address, or from all, this hour",
	},
	publicPrefix + "StartClaim": {
		"404": "claim_not_found: no claim with this id, or a wrong claim_secret",
		"422": "A claim_id that is no UUID, no claim_secret, or a method the namespace does not accept",
		"429": "scan_rate_limited (with retry_after_seconds and Retry-After): too many checks from this address, or from all, this hour",
		"503": "code_host_unavailable: the code-host sign-in is not configured",
	},
}

// publicPlainRoutes documents the claim pages and the code host's sign-in callback.
var publicPlainRoutes = []apidoc.Route{
	{
		Method: "GET", Path: "/claim", OperationID: "PublicService_ClaimPage", Tag: "PublicService",
		Summary: "The claim page of a server listing",
		Description: "Query server (optional, namespace/name), source (default 'direct'), intent (optional). No credential. " +
			"A malformed value is shown back as text with a notice; the page always answers 200. Its script calls POST /claim/intent and POST /claim/start.",
		Produces:  "text/html",
		Responses: map[string]string{"200": "the page"},
	},
	{
		Method: "GET", Path: "/claim/start/{namespace}/{name}", OperationID: "PublicService_ClaimStartPage", Tag: "PublicService",
		Summary: "A redirect surface to the claim page of a server",
		Description: "Query source (default 'direct') and next (default 'claim', the only value). No credential. Answers 200 with a page " +
			"that sends the browser on at once (meta refresh, and a link) to /claim?server=<namespace>/<name>&source=...&intent=start; never a 3xx.",
		Produces:  "text/html",
		Responses: map[string]string{"200": "the redirect page", "422": "a namespace that cannot be claimed, a bad source, or next other than 'claim'"},
	},
	{
		Method: "GET", Path: "/claim/callback", OperationID: "PublicService_ClaimCallback", Tag: "PublicService",
		Summary:     "The end of the code host's sign-in of a claim",
		Description: "Query code and state, as the code host sends them. Verifies the io.github.<user> claim when the signed-in account is <user>. No credential.",
		Produces:    "text/html",
		Responses: map[string]string{"200": "the outcome page (verified, or why not)", "400": "claim_state_invalid: unknown, used or expired state",
			"502": "code_host_failed: the code host refused the code"},
	},
}
