package api

// reliabilityAnswers are the statuses this area's methods answer besides success and 401.
var reliabilityAnswers = map[string]map[string]string{
	wsPrefix + "ListRepositories": {},
	wsPrefix + "CreateRepository": {"201": "The repository", "403": "repository_limit_reached (1000 per workspace)",
		"409": "repository_already_exists", "422": "A full_name that is not owner/name, or a bad default_branch or description"},
	wsPrefix + "GetRepository": {"404": "repository_not_found"},
	wsPrefix + "UpdateRepository": {"404": "repository_not_found", "409": "repository_already_exists or code_host_repository_rename",
		"422": "A bad full_name, default_branch or description"},
	wsPrefix + "DeleteRepository": {"204": "Deleted, with its targets, schedules, policy, runs, approvals, baselines and evidence", "404": "repository_not_found"},
	wsPrefix + "ListTargets":      {"404": "repository_not_found"},
	wsPrefix + "CreateTarget": {"201": "The target", "402": "plan_limit_reached (with limit and plan)",
		"403": "target_limit_reached (100 per repository)", "404": "repository_not_found", "409": "target_already_exists",
		"422": "A bad name or evaluator, or a refused url (the type is the refusal's code: public_https_url_required, ssrf_host_blocked, dns_resolution_failed, ...)"},
	wsPrefix + "UpdateTarget": {"404": "repository_not_found or target_not_found", "409": "target_already_exists",
		"422": "A bad name or evaluator, or a refused url"},
	wsPrefix + "DeleteTarget":      {"204": "Deleted, with its schedule, runs and their trails", "404": "repository_not_found or target_not_found"},
	wsPrefix + "GetTargetSchedule": {"404": "repository_not_found or target_not_found"},
	wsPrefix + "PutTargetSchedule": {"404": "repository_not_found or target_not_found",
		"422": "Both or neither of interval_seconds and cron, an interval outside 60..2592000, a bad or never-due cron expression, an unknown timezone"},
	wsPrefix + "GetDeploymentPolicy": {"404": "repository_not_found"},
	wsPrefix + "PutDeploymentPolicy": {"404": "repository_not_found", "409": "policy_revision_conflict (with the current revision)",
		"422": "A bad rule (the location names it: rules.2.change), default_action or updated_by"},
	wsPrefix + "CompleteInstallation": {"409": "installation_linked_elsewhere or installation_suspended",
		"422": "A bad installation_id or setup_action, or installation_not_found (the code host has no such installation of the app)",
		"503": "code_host_not_configured or code_host_unavailable"},
	wsPrefix + "DeleteWorkspace": {"422": "confirm is not \"delete all agent reliability data\": nothing is deleted"},
}

// wsPrefix is the gRPC prefix of the workspace methods.
const wsPrefix = "/verification.v1.ReliabilityWorkspaceService/"
