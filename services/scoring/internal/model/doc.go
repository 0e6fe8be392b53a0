// Package model is the scoring service's model runtime: the code book and feature extraction shared
// with training, the calibrated denial and prior-auth classifiers, the reimbursement regressor, denial
// profile auto-detection and drift flags, all read from the artifacts cmd/scoring-train writes and this
// package embeds.
//
// Scoring is deterministic (README: identical inputs and model version give identical output) and
// does not allocate, factors included, so a scoring handler adds no garbage per claim. Loading, drift
// names and model cards allocate; they run at start or for responses and logs.
//
// MODELS.md documents the synthetic data, the features, training, calibration, tiers, payer support,
// drift and the artifact files.
package model
