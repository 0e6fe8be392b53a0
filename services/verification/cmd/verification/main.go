// Command verification runs the verification service; `verification migrate` applies its database migrations and exits.
package main

import (
	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/services/verification/app"
)

func main() { platform.RunMain(app.Name, app.Main) }
