"""Reading JTLs: JMeter's quoting, error names, order, truncated lines."""
import pytest

from report.read.jtl import error_name, read_jtl

HEADER = ("timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,failureMessage,"
          "bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect\n")


@pytest.mark.parametrize("code, message, failure, expected", [
    ("Non HTTP response code: java.net.SocketTimeoutException", "Non HTTP response message: Read timed out", "",
     "java.net.SocketTimeoutException: Read timed out"),
    ("Non HTTP response code: org.apache.http.NoHttpResponseException",
     "Non HTTP response message: 127.0.0.1:8081 failed to respond", "",
     "org.apache.http.NoHttpResponseException: 127.0.0.1:8081 failed to respond"),
    ("Non HTTP response code: java.net.ConnectException", "", "", "java.net.ConnectException"),
    ("502", "Bad Gateway", "", "HTTP 502 Bad Gateway"),
    ("502", "502", "", "HTTP 502"),          # seen: the app's 502 through AJP came with the code as its reason
    ("404", "", "", "HTTP 404"),
    ("200", "OK", "Test failed: text expected to contain /customerId/",
     "assertion: Test failed: text expected to contain /customerId/"),
])
def test_error_names(code, message, failure, expected):
    assert error_name(code, message, failure) == expected


def test_quoted_fields_unsorted_rows_and_a_cut_last_line(tmp_path):
    jtl = tmp_path / "j.jtl"
    jtl.write_text(HEADER
                   + '2000,10,get,200,OK,"users 1-1",text,true,,10,10,1,1,http://h/a,9,0,0\n'
                   + '1000,5000,"summary, composed",Non HTTP response code: java.net.SocketTimeoutException,'
                     'Non HTTP response message: Read timed out,users 1-2,text,false,,0,0,1,1,http://h/b,0,0,0\n'
                   + '3000,1')  # the run was killed while JMeter wrote this line
    samples = read_jtl(jtl)
    assert list(samples.start) == [1.0, 2.0]  # by start time, in seconds
    assert list(samples.label) == ["summary, composed", "get"]
    assert list(samples.ok) == [False, True]
    assert samples.error[0] == "java.net.SocketTimeoutException: Read timed out" and samples.error[1] == ""
    assert samples.bad_rows == 1
    assert list(samples.end) == [6.0, 2.01]


def test_a_file_that_is_not_a_jtl_is_refused(tmp_path):
    bad = tmp_path / "x.jtl"
    bad.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(ValueError, match="timeStamp"):
        read_jtl(bad)


def test_an_empty_jtl_has_no_samples(tmp_path):
    empty = tmp_path / "e.jtl"
    empty.write_text("")
    assert len(read_jtl(empty)) == 0
