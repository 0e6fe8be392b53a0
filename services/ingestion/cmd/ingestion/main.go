// Command ingestion runs the ingestion service; `ingestion migrate` applies its database migrations and exits.
package main

import (
	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/services/ingestion/app"
)

func main() { platform.RunMain(app.Name, app.Main) }
