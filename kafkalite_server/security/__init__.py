"""Broker security: JAAS users, SCRAM credentials, ACLs and the authorizer."""
