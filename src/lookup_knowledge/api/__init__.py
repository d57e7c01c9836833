"""HTTP entry points: thin routes over the service, one error handler."""
