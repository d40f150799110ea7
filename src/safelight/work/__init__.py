"""The engine: work items, their store on PostgreSQL, the executor and the Worker."""
