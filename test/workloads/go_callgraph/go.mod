module gocallgraph

go 1.22
