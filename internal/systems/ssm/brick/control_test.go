package brick

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestControl(t *testing.T) {
	crashed := make(chan string, 1)
	cfg := DefaultConfig()
	cfg.ID = 1
	cfg.ControlToken = "secret"
	cfg.OnCrash = func(reason string) { crashed <- reason }
	b, err := Start(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	post := func(token, body string) (int, ControlReply) {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://"+b.Addr()+"/control", strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var rep ControlReply
		_ = json.NewDecoder(resp.Body).Decode(&rep)
		return resp.StatusCode, rep
	}
	if code, _ := post("", `{"action":"clear"}`); code != 401 {
		t.Fatalf("no token: %d", code)
	}
	if code, _ := post("wrong", `{"action":"clear"}`); code != 401 {
		t.Fatalf("wrong token: %d", code)
	}
	for _, body := range []string{`{"action":"melt"}`, `{"action":"slow","delay":"-1s"}`, `{"action":"slow","delay":"1ms","duration":"2h"}`,
		`{"action":"bitflip","target":"heap"}`, `{"action":"bitflip","which":"oldest"}`, `{"action":"clear","extra":1}`, `not json`} {
		if code, rep := post("secret", body); code != 400 || rep.Error == "" {
			t.Errorf("%s: %d %+v", body, code, rep)
		}
	}
	if code, rep := post("secret", `{"action":"slow","delay":"3ms","duration":"50ms"}`); code != 200 || rep.Slow != "3ms" {
		t.Fatalf("slow: %d %+v", code, rep)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Duration(b.slow.Load()) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("slow with a duration did not revert")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code, rep := post("secret", `{"action":"bitflip"}`); code != 200 || len(rep.Flipped) != 0 {
		t.Fatalf("bitflip on an empty brick: %d %+v", code, rep)
	}
	if code, _ := post("secret", `{"action":"crash"}`); code != 200 {
		t.Fatalf("crash: %d", code)
	}
	select {
	case <-crashed:
	case <-time.After(5 * time.Second):
		t.Fatal("crash action did not call OnCrash")
	}
	// Without a token the endpoint does not exist.
	cfg.ControlToken = ""
	cfg.ID = 2
	b2, err := Start(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	resp, err := http.Post("http://"+b2.Addr()+"/control", "application/json", strings.NewReader(`{"action":"clear"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("disabled control: %d", resp.StatusCode)
	}
}

// TestCrashAnswerIsComplete: a brick asked to crash exits as soon as it
// has answered, and the answer must be whole by then — the stack bit flip
// of Ling, Kiciman and Fox (2004) §5.5 is injected this way, and an
// injector reading "unexpected EOF" fails the run. The crash here closes
// every connection at once, as the process's exit does.
func TestCrashAnswerIsComplete(t *testing.T) {
	var b *Brick
	cfg := DefaultConfig()
	cfg.ID = 1
	cfg.ControlToken = "secret"
	cfg.OnCrash = func(string) { _ = b.srv.Close() }
	b, err := Start(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	req, _ := http.NewRequest("POST", "http://"+b.Addr()+"/control", strings.NewReader(`{"action":"crash"}`))
	req.Header.Set("Authorization", "Bearer secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the crash's answer: %v (got %q)", err, body)
	}
	var rep ControlReply
	if err := json.Unmarshal(body, &rep); err != nil || !rep.OK || resp.StatusCode != 200 {
		t.Fatalf("answer %d %q: %v", resp.StatusCode, body, err)
	}
}
