module k8s-bootstrap-benches/nodekey

go 1.19
