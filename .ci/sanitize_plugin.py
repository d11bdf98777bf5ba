"""pytest plugin for .ci/sanitize: a hypothesis profile with fewer examples, for a run ~5x slower.

Loaded with ``-p sanitize_plugin`` before the tests' conftest, which then loads the profile
HYPOTHESIS_PROFILE names: "sanitize".
"""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "sanitize", suppress_health_check=list(HealthCheck), deadline=None, max_examples=25, print_blob=True
)
