package client

import (
	"context"

	"github.com/agentsdk/agentsdk/api"
)

// CreateKey creates an API key with a name and roles (the host's: its
// agent.yaml auth.roles over [api.DefaultRoles]), lasting expiresIn ("90d",
// "720h"; "" for no expiry). It returns the key's record and the key
// itself, ask_<id>_<secret>, which no later answer shows again: the
// host keeps only its hash. It needs the admin permission; an unknown role,
// a missing name or a bad expiry is [api.CodeInvalidKey].
func (c *Client) CreateKey(ctx context.Context, name string, roles []string, expiresIn string) (api.Key, string, error) {
	var ans api.KeyCreated
	req := api.CreateKeyRequest{Name: name, Roles: roles, ExpiresIn: expiresIn}
	if err := c.call(ctx, "createKey", nil, nil, req, &ans); err != nil {
		return api.Key{}, "", err
	}
	return ans.Key, ans.Secret, nil
}

// Keys lists the host's API keys, oldest first, revoked and expired ones
// included, without their secrets.
func (c *Client) Keys(ctx context.Context) ([]api.Key, error) {
	var ans api.KeyList
	if err := c.call(ctx, "listKeys", nil, nil, nil, &ans); err != nil {
		return nil, err
	}
	return ans.Keys, nil
}

// RevokeKey revokes an API key. It returns (in about a second) once
// every host sharing the store refuses the key. Revoking it again changes nothing; an unknown id
// is [api.CodeKeyNotFound].
func (c *Client) RevokeKey(ctx context.Context, id string) (api.Key, error) {
	var ans api.KeyResponse
	if err := c.call(ctx, "revokeKey", []string{id}, nil, nil, &ans); err != nil {
		return api.Key{}, err
	}
	return ans.Key, nil
}
