"""InstantStart core library: the control plane rules, shared by every handler."""
