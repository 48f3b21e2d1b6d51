package workload

import (
	"encoding/json"
	"errors"

	"github.com/faultbench/faultbench/internal/reqtmpl"
)

// etcdAPI speaks etcd's v3 JSON gateway (grpc-gateway): POST
// PREFIX/kv/put {"key": b64, "value": b64} and POST PREFIX/kv/range
// {"key": b64}, whose answer lists the key in "kvs" (absent when the key
// does not exist), keys and values base64-encoded. PREFIX is /v3 on etcd
// 3.4 (/v3beta on 3.3).
//
// The bodies are request templates (internal/reqtmpl), parsed once; the
// key's name in them is the one kvUser.key builds.
type etcdAPI struct{ put, rng string }

var (
	etcdPutBody   = reqtmpl.MustParse(`{"key":"{{base64}}fb/c{{client}}-u{{user}}/k{{key}}{{end}}","value":"{{value | base64}}"}`)
	etcdRangeBody = reqtmpl.MustParse(`{"key":"{{base64}}fb/c{{client}}-u{{user}}/k{{key}}{{end}}"}`)
)

func init() {
	kvAPIs["etcd"] = func(prefix string) kvAPI { return etcdAPI{put: prefix + "/kv/put", rng: prefix + "/kv/range"} }
}

func (e etcdAPI) Put(dst []byte, v *reqtmpl.Vars) (string, string, []byte) {
	return "POST", e.put, etcdPutBody.Render(dst, v)
}

func (e etcdAPI) Get(dst []byte, v *reqtmpl.Vars) (string, string, []byte) {
	return "POST", e.rng, etcdRangeBody.Render(dst, v)
}

// etcdHeader is what every etcd answer carries; a put's answer is only it.
type etcdHeader struct {
	Header *struct {
		Revision string `json:"revision"`
	} `json:"header"`
}

func (etcdAPI) PutOK(body []byte) bool {
	var h etcdHeader
	return json.Unmarshal(body, &h) == nil && h.Header != nil && h.Header.Revision != ""
}

type etcdRange struct {
	etcdHeader
	KVs []struct {
		Key   []byte `json:"key"`   // base64 in JSON
		Value []byte `json:"value"` // base64 in JSON
	} `json:"kvs"`
}

var errEtcdAnswer = errors.New("not an etcd range answer")

func (etcdAPI) Value(body []byte) ([]byte, bool, error) {
	var r etcdRange
	if err := json.Unmarshal(body, &r); err != nil || r.Header == nil {
		return nil, false, errEtcdAnswer
	}
	switch len(r.KVs) {
	case 0:
		return nil, false, nil
	case 1:
		return r.KVs[0].Value, true, nil
	}
	return nil, false, errEtcdAnswer
}
