import ssl

from urllib.error import URLError

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common.tls import certificate_hint
from ansible_collections.overcommit.control.plugins.module_utils.prometheus import client as prometheus


def refusal():
    return ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")


def test_a_wrapped_certificate_refusal_names_the_options_that_decide_it():
    wrapped = URLError(refusal())
    assert "give the CA that signed it with prometheus_ca_cert" in certificate_hint(
        wrapped, "prometheus_ca_cert", "prometheus_validate_certs")
    assert "prometheus_validate_certs: false" in certificate_hint(wrapped, "prometheus_ca_cert",
                                                                  "prometheus_validate_certs")
    chained = RuntimeError("outer")
    chained.__cause__ = refusal()
    assert "system's trusted CAs" in certificate_hint(chained, None, "validate_certs")


def test_other_connection_errors_get_no_hint():
    assert certificate_hint(URLError(ConnectionRefusedError(111, "refused")), "ca_cert", "validate_certs") == ""


def test_prometheus_does_not_retry_a_certificate_refusal():
    def refuse(*args, **kwargs):
        calls.append(1)
        raise URLError(refusal())

    calls = []
    original = prometheus.open_url
    prometheus.open_url = refuse
    try:
        client = prometheus.PrometheusClient("https://prometheus.example:9090", retry_seconds=5)
        with pytest.raises(prometheus.PrometheusError) as error:
            client.query("up")
        assert "prometheus_validate_certs: false" in str(error.value)
    finally:
        prometheus.open_url = original
    assert calls == [1] and client.retry_log.attempts == 0
