package api

// enforcementPrefix starts the gRPC methods of the enforcement routes.
const enforcementPrefix = "/verification.v1.EnforcementService/"

// enforcementAnswers are the statuses this area's methods answer besides success and 401.
var enforcementAnswers = map[string]map[string]string{
	enforcementPrefix + "CreatePolicy": {"201": "The policy, with version 1 when the body has rules",
		"409": "enforcement_policy_name_exists",
		"422": "No name, a name over 200 or a description over 2000 characters, or bad rules (unknown action, risk, verdict or transport, " +
			"a bad pattern, a readiness score outside 0..100, too many patterns)"},
	enforcementPrefix + "GetPolicy": {"404": "enforcement_policy_not_found: unknown, or another organization's"},
	enforcementPrefix + "CreatePolicyVersion": {"201": "The version", "404": "enforcement_policy_not_found",
		"422": "No rules, bad rules (as for POST /policies), or a note over 2000 characters"},
	enforcementPrefix + "PreviewPolicy": {"404": "enforcement_policy_not_found",
		"409": "enforcement_policy_has_no_version: add a version first",
		"429": "enforcement_snapshot_rate_limited (with limit, and Retry-After): the organization stored ENFORCEMENT_SNAPSHOTS_PER_HOUR new snapshots in the last hour",
		"422": "A negative version, a version the policy does not have, or a format (a preview takes none)"},
	enforcementPrefix + "GetSnapshot": {"404": "enforcement_snapshot_not_found: unknown, or another organization's"},
	enforcementPrefix + "CreateArtifact": {"201": "The artifact (the same one again for the same snapshot and format)",
		"404": "enforcement_snapshot_not_found", "422": "A format other than json_allowlist or opa_rego, or a version other than the snapshot's"},
	enforcementPrefix + "GetArtifact": {"404": "enforcement_artifact_not_found: unknown, or another organization's"},
}
