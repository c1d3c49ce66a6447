"""Forges: a workspace's connection to GitHub (a GitHub App or a token, github.com or GitHub Enterprise Server),
its repos' links to forge repositories, and the credential broker that hands confined code short-lived tokens
for hosts its enclosure reaches. Other parts use it through services it provides (``ShellEnvironment``, the
pipelines part's); the composition lists ``hangar.forges.part.FORGES_PART``."""
