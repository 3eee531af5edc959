#!/bin/sh
# A stand-in for `go test -json ./...` with one failing test, without the
# cost of compiling in a fresh sandbox.
cat <<'JSON'
{"Action":"start","Package":"example.com/widgets"}
{"Action":"run","Package":"example.com/widgets","Test":"TestAdd"}
{"Action":"output","Package":"example.com/widgets","Test":"TestAdd","Output":"=== RUN   TestAdd\n"}
{"Action":"output","Package":"example.com/widgets","Test":"TestAdd","Output":"    calc_test.go:7: Add(1, 1) = 3, want 2\n"}
{"Action":"output","Package":"example.com/widgets","Test":"TestAdd","Output":"--- FAIL: TestAdd (0.00s)\n"}
{"Action":"fail","Package":"example.com/widgets","Test":"TestAdd","Elapsed":0}
{"Action":"run","Package":"example.com/widgets","Test":"TestSub"}
{"Action":"pass","Package":"example.com/widgets","Test":"TestSub","Elapsed":0}
{"Action":"run","Package":"example.com/widgets","Test":"TestSkip"}
{"Action":"skip","Package":"example.com/widgets","Test":"TestSkip","Elapsed":0}
{"Action":"fail","Package":"example.com/widgets","Elapsed":0}
JSON
exit 1
