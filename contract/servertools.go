package contract

// Server tools: the tools a model provider runs itself, on its own
// servers, while it answers a request, as opposed to the tools the agent's
// CLI runs in the sandbox. Each reaches beyond the provider's API or costs
// outside the token count: a host of the request's choosing (MCP servers,
// web fetch), the open web (web search), the provider's own machines (code
// execution, computer use), the organisation's stored files (file search),
// images (image generation). The model proxy refuses a request that offers
// one unless the server names its class in the provider's
// allowed_server_tools (decision 0055).
const (
	ServerToolWebSearch       = "web_search"
	ServerToolWebFetch        = "web_fetch"
	ServerToolCodeExecution   = "code_execution"
	ServerToolComputerUse     = "computer_use"
	ServerToolMCP             = "mcp"
	ServerToolFileSearch      = "file_search"
	ServerToolImageGeneration = "image_generation"
)

// ServerTools lists the server tool classes, sorted.
func ServerTools() []string {
	return []string{ServerToolCodeExecution, ServerToolComputerUse, ServerToolFileSearch, ServerToolImageGeneration,
		ServerToolMCP, ServerToolWebFetch, ServerToolWebSearch}
}
