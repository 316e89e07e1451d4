"""Training jobs on a cluster: recipes turned into custom resources (builders), the rules that refuse what cannot
run (rules), and the API side and day-2 change that apply, read and delete them (service)."""
