"""Optional benchmark adapters, each the only module importing its benchmark's package (pip install
"handloop[agentdojo]" or "handloop[tau2]"); the core imports none of them."""
