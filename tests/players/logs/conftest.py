"""The tests of ratings rebuilt from the logs run on the services' stack (a referee and a scoring
service, on the real Redis when REDIS_URL is set), not the gateway's."""

from tests.services.conftest import stack  # noqa: F401
