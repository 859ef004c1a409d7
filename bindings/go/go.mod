module mxlimit

go 1.19
