module k8s-bootstrap-benches/servingcsr

go 1.19
