"""The JSON API for agents and scripts: status, search, query,
open-reference, a source's chunk context and the admin actions. Session or
token auth; members only ever see what they may see."""
