"""`zkafka soak`: a containerized cluster under random compound faults, a recorded history of every operation, and a checker (Jepsen-style)."""
