package modelproxy

import (
	"testing"
)

func TestUsageMeterReadsWhatProvidersReport(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		want   Usage
	}{
		{"responses stream", []string{
			"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"usage\":null}}\n\n",
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":120,\"output_tokens\":30,\"total_tokens\":150}}}\n\n",
		}, Usage{InputTokens: 120, OutputTokens: 30, TotalTokens: 150}},
		{"split across chunks", []string{
			"data: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_to",
			"kens\":7,\"output_tokens\":3}}}\r\n\r\n",
		}, Usage{InputTokens: 7, OutputTokens: 3, TotalTokens: 10}},
		{"anthropic stream", []string{
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":50,\"output_tokens\":1}}}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":12}}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":20}}\n\n",
		}, Usage{InputTokens: 50, OutputTokens: 20, TotalTokens: 70}},
		{"whole chat body", []string{`{"object":"chat.completion","usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}`},
			Usage{InputTokens: 9, OutputTokens: 4, TotalTokens: 13}},
		{"an error body", []string{`{"error":{"message":"bad key"}}`}, Usage{}},
		{"garbage", []string{"data: {not json\n\n"}, Usage{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &usageMeter{}
			for _, c := range tc.chunks {
				m.Write([]byte(c))
			}
			if got := m.usage(); got != tc.want {
				t.Errorf("usage = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestModelRefusalReadsTheBodyAsProvidersWould(t *testing.T) {
	for body, refused := range map[string]bool{
		``:                                      false,
		`  `:                                    false,
		`{}`:                                    false,
		`{"model":"allowed","input":"hi"}`:      false,
		`{"input":"hi"}`:                        false,
		`{"model":"other"}`:                     true,
		`{"model":"other","Model":"allowed"}`:   true,
		`{"Model":"allowed"}`:                   true,
		`{"model":"other","model":"allowed"}`:   true,
		`{"model":"allowed","model":"allowed"}`: true,
		`{"model":7}`:                           true,
		`[{"model":"other"}]`:                   true,
		`{"model":"allowed"} {"model":"x"}`:     true,
		`{"model":"allowed"`:                    true,
		`not json`:                              true,
	} {
		if got := modelRefusal([]byte(body), "allowed") != ""; got != refused {
			t.Errorf("modelRefusal(%s): refused = %v, want %v", body, got, refused)
		}
	}
}
