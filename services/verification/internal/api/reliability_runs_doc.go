package api

const runsPrefix = "/verification.v1.ReliabilityRunService/"

// runAnswers are the statuses this area's methods answer besides success and 401.
var runAnswers = map[string]map[string]string{
	runsPrefix + "CreateScan": {
		"202": "The run queued, or the target's run already queued or running (a scan asked for meanwhile joins it)",
		"402": "plan_limit_reached: the workspace's plan allows no more scans this month (limit, plan)",
		"404": "target_not_found",
		"422": "Validation error; a target URL the SSRF guard now refuses is a problem of target_id whose type is the refusal's code",
	},
	runsPrefix + "ListRuns": {
		"422": "Validation error: limit outside 1..200, a malformed target_id or repository_id, an unknown state",
	},
	runsPrefix + "GetRun": {"404": "run_not_found"},
	runsPrefix + "CreateDiff": {
		"404": "run_not_found",
		"409": "run_not_finished, no_baseline (no base_run_id and the target has no baseline) or run_of_another_target",
		"422": "Validation error: head_run_id missing, or a malformed id",
	},
	runsPrefix + "EvaluateDeploymentPolicy": {
		"404": "run_not_found",
		"409": "run_not_finished, no_baseline (no base_run_id and the target has no baseline) or run_of_another_target",
		"422": "Validation error: head_run_id missing, or a malformed id",
	},
	runsPrefix + "GetRunEvidence": {
		"404": "run_not_found",
		"409": "run_not_finished: the run has no evidence until it finishes",
	},
	runsPrefix + "GetRunEvidencePage": {
		"200": "The evidence page (text/html; charset=utf-8): the run, decision and reasons, changes, summary, tool surface, audits' checks and the manifest; no script, no external asset",
		"404": "run_not_found",
		"409": "run_not_finished: the run has no evidence until it finishes",
	},
	runsPrefix + "PromoteTargetBaseline": {
		"404": "target_not_found (the repository and target of the path), or run_not_found (run_id of the body)",
		"409": "run_not_promotable (a queued, running, failed, blocked or needs_approval run; state), no_promotable_run or run_of_another_target",
		"422": "Validation error: a malformed run_id, actor over 200 or reason over 2000 characters",
	},
	runsPrefix + "PromoteRunBaseline": {
		"404": "run_not_found",
		"409": "run_not_promotable: only a succeeded or approved run can be a baseline (state)",
		"422": "Validation error: actor over 200 or reason over 2000 characters",
	},
	runsPrefix + "RollbackTargetBaseline": {
		"404": "target_not_found",
		"409": "no_previous_baseline: the target has no baseline before its current one",
		"422": "Validation error: actor over 200 or reason over 2000 characters",
	},
	runsPrefix + "ApproveRun": {
		"404": "run_not_found",
		"409": "run_not_awaiting_approval: only a run in needs_approval can be approved (state)",
		"422": "Validation error: approved_by (1..200 characters) and reason (1..2000) are required",
	},
	runsPrefix + "EnqueueDueScans": {
		"422": "Validation error: limit outside 1..200",
	},
}
