// Command scoring runs the scoring service; `scoring migrate` applies its database migrations and exits.
package main

import (
	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/services/scoring/app"
)

func main() { platform.RunMain(app.Name, app.Main) }
