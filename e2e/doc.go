// Package e2e holds the tests that need the whole stack: the three services started in-process against
// real PostgreSQL and NATS, and checks that the deployment files agree with the services' configuration.
package e2e
