package serve

import (
	"errors"

	"github.com/agentsdk/agentsdk/tool"
)

// TEMPORARY until api.OpenAPI lands.
func openAPIDocument(slug string, tools []tool.Info) ([]byte, error) {
	return nil, errors.New("not yet")
}
