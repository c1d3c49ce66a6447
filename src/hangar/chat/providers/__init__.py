"""The chat providers the bridge speaks to; one package each (today ``slack``)."""
